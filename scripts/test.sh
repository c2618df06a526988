#!/usr/bin/env bash
# Runs every test: the corruption catalogue generator, the C++ suites (Release, then AddressSanitizer +
# UndefinedBehaviorSanitizer, then ThreadSanitizer for the concurrent layers), a bounded fuzz run, the
# Python suite, openslide-python's own test suite against tilewise.openslide, and the wheel (built, installed into a
# clean Debian 12 chroot, tested there). Assumes scripts/bootstrap.sh and
# scripts/build.sh ran (./run test does all three).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
status=0
section() { echo "== $* [${SECONDS}s into the tests]"; }  # a header, with the time spent so far

section "Corruption catalogue"
.venv/bin/python tests/data/catalogue.py build/catalogue
export TILEWISE_CATALOGUE_DIR="$PWD/build/catalogue"

section "C++ tests (Release)"
ctest --test-dir build/py --output-on-failure -j "$jobs" || status=1

section "C++ package (cmake --install, then find_package(tilewise) from tests/package)"
package_test() {
  local prefix=$PWD/build/pkg-prefix slide=$PWD/build/catalogue/good-aperio-jpeg-rgb.svs
  # Configured as build.sh configures the library (the GPU path too when nvcc and the header are there).
  cmake -S . -B build/pkg -G Ninja -DCMAKE_BUILD_TYPE=Release -DTILEWISE_BUILD_PYTHON=OFF -DTILEWISE_BUILD_CLI=OFF \
    -DCMAKE_INSTALL_PREFIX="$prefix" >/dev/null
  cmake --build build/pkg -j "$jobs" >/dev/null
  rm -rf "$prefix" && cmake --install build/pkg >/dev/null
  cmake -S tests/package -B build/pkg-consumer -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
  cmake --build build/pkg-consumer >/dev/null
  local got want
  # An Aperio slide, and a Zeiss CZI of JPEG XR subblocks (decoded by the installed helper process).
  for slide in "$slide" "$PWD/build/catalogue/good-czi-jpegxr.czi"; do
    got=$(build/pkg-consumer/consumer "$slide")
    want=$(.venv/bin/python -c "import sys, tilewise; s = tilewise.open(sys.argv[1]); w, h = s.dimensions; \
px = s.read_region((10, 20), (64, 48)); print(f'levels {s.level_count} {w} {h} sum {int(px.sum())} batches 2')" "$slide")
    echo "installed package, $(basename "$slide"): $got"
    [ "$got" = "$want" ] || { echo "expected: $want"; return 1; }
  done
}
package_test || status=1

sanitizer_build() {  # name, sanitizers, ctest regex
  local dir=build/$1
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTILEWISE_BUILD_TESTS=ON \
    -DTILEWISE_BUILD_PYTHON=OFF -DTILEWISE_BUILD_CLI=OFF -DTILEWISE_SANITIZE="$2" >/dev/null
  cmake --build "$dir" -j "$jobs" >/dev/null
  section "C++ tests ($2)"
  ctest --test-dir "$dir" --output-on-failure -j "$jobs" -R "$3" || status=1
}
if [ "${TILEWISE_SKIP_SANITIZERS:-0}" != 1 ]; then
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    sanitizer_build asan address,undefined "."
  TSAN_OPTIONS=halt_on_error=1 sanitizer_build tsan thread "ThreadPool|TileCache|McuIndexCache|TileResume|RegionReader|FileSource|BatchLoader|LoaderCombos|TileLanes|Scheduler|DeviceTileCache|DeviceRegionReader|WorkerProcessPool|PlaneBands"
fi

if [ "${TILEWISE_SKIP_FUZZ:-0}" != 1 ]; then
  section "Fuzz smoke run (libFuzzer, ASan + UBSan; scripts/fuzz.sh 600 for a long run)"
  TILEWISE_FUZZ_SEED=${TILEWISE_FUZZ_SEED:-1} scripts/fuzz.sh "${TILEWISE_FUZZ_SECONDS:-15}" || status=1
fi

section "Python tests"
.venv/bin/python -m pytest -q -rs tests/python tests/gpu || status=1

section "Peers' own test suites against the drop-in modules"
tests/compat/run_openslide_suite.sh || status=1

if [ "${TILEWISE_SKIP_WHEEL:-0}" != 1 ]; then
  section "Wheel: sdist and manylinux wheel, installed into a clean Debian 12 chroot, the Python tests there"
  if scripts/build-wheel.sh build/dist; then
    wheel_status=0
    scripts/test-wheel.sh "$(ls -t build/dist/tilewise-*manylinux*.whl | head -1)" || wheel_status=$?
    if [ "$wheel_status" = 77 ]; then
      echo "SKIPPED: the clean-chroot wheel test (this machine cannot host a chroot; see the line above)"
    elif [ "$wheel_status" != 0 ]; then
      status=1
    fi
  else
    status=1
  fi
fi
section "Done (status $status)"
exit $status
