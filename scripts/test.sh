#!/usr/bin/env bash
# Runs every test: the corruption catalogue generator, the C++ suites (Release, then AddressSanitizer +
# UndefinedBehaviorSanitizer, then ThreadSanitizer for the concurrent layers), a bounded fuzz run, and the
# Python suite. Assumes scripts/bootstrap.sh and
# scripts/build.sh ran (./run test does all three).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
status=0

echo "== Corruption catalogue"
.venv/bin/python tests/data/catalogue.py build/catalogue
export TILEWISE_CATALOGUE_DIR="$PWD/build/catalogue"

echo "== C++ tests (Release)"
ctest --test-dir build/py --output-on-failure -j "$jobs" || status=1

sanitizer_build() {  # name, sanitizers, ctest regex
  local dir=build/$1
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTILEWISE_BUILD_TESTS=ON \
    -DTILEWISE_BUILD_PYTHON=OFF -DTILEWISE_BUILD_CLI=OFF -DTILEWISE_SANITIZE="$2" >/dev/null
  cmake --build "$dir" -j "$jobs" >/dev/null
  echo "== C++ tests ($2)"
  ctest --test-dir "$dir" --output-on-failure -j "$jobs" -R "$3" || status=1
}
if [ "${TILEWISE_SKIP_SANITIZERS:-0}" != 1 ]; then
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    sanitizer_build asan address,undefined "."
  TSAN_OPTIONS=halt_on_error=1 sanitizer_build tsan thread "ThreadPool|TileCache|RegionReader|FileSource|BatchLoader|LoaderCombos|TileLanes|DeviceTileCache"
fi

if [ "${TILEWISE_SKIP_FUZZ:-0}" != 1 ]; then
  echo "== Fuzz smoke run (libFuzzer, ASan + UBSan; scripts/fuzz.sh 600 for a long run)"
  scripts/fuzz.sh "${TILEWISE_FUZZ_SECONDS:-15}" || status=1
fi

echo "== Python tests"
.venv/bin/python -m pytest -q -rs tests/python tests/gpu || status=1
exit $status
