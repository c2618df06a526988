#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan + coverage) and runs each for SECONDS seconds
# (default 30) on a seed corpus made from the catalogue's good files plus tests/fuzz/regressions/ (inputs
# that once failed). A single allocation above 512 MB counts as a failure. Crashes are written to
# build/fuzz-artifacts/; each one found becomes a regression input and, where it applies to files, a
# catalogue entry.
#   scripts/fuzz.sh [SECONDS] [TARGET...]     e.g. scripts/fuzz.sh 600 fuzz_codecs
# TILEWISE_FUZZ_SEED=N (the test run's smoke run sets 1): libFuzzer's seed fixed and a fresh working corpus,
# so that a run explores the same inputs on every machine (a slower one a prefix of them) and CI's smoke
# run finds what the same run here would; without it, a random seed and the corpus kept in build/fuzz-work/
# from earlier runs (long runs, to find what is new).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(fuzz_tiff_parser fuzz_dicom fuzz_dicomweb fuzz_codecs fuzz_jpegxr fuzz_open_read fuzz_mirax fuzz_vsi)
CC=clang-14 CXX=clang++-14 cmake -S . -B build/fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTILEWISE_BUILD_FUZZERS=ON -DTILEWISE_BUILD_PYTHON=OFF -DTILEWISE_BUILD_CLI=OFF -DTILEWISE_BUILD_TESTS=OFF >/dev/null
cmake --build build/fuzz -j "$(nproc)" >/dev/null
[ -f build/catalogue/catalogue.json ] || .venv/bin/python tests/data/catalogue.py build/catalogue >/dev/null
.venv/bin/python tests/fuzz/make_seeds.py build/catalogue build/fuzz-corpus
mkdir -p build/fuzz-artifacts
status=0
for t in "${targets[@]}"; do
  corpus=build/fuzz-corpus/${t#fuzz_}
  [ "$t" = fuzz_tiff_parser ] && corpus=build/fuzz-corpus/tiff
  work=build/fuzz-work/$t
  seed=()
  if [ -n "${TILEWISE_FUZZ_SEED:-}" ]; then
    work=build/fuzz-work-seeded/$t
    rm -rf "$work"
    seed=(-seed="$TILEWISE_FUZZ_SEED")
  fi
  mkdir -p "$work"
  echo "== $t for ${seconds}s"
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    "build/fuzz/tests/fuzz/$t" "${seed[@]}" -max_total_time="$seconds" -rss_limit_mb=4096 -max_len=262144 -timeout=20 \
    -malloc_limit_mb=512 -artifact_prefix="build/fuzz-artifacts/$t-" -print_final_stats=1 "$work" "$corpus" \
    $( [ -d "tests/fuzz/regressions/${t#fuzz_}" ] && echo "tests/fuzz/regressions/${t#fuzz_}" ) \
    2>&1 | grep -E "^#[0-9]+.*(DONE|INITED)|stat::number_of_executed_units|stat::peak_rss|cov:|ERROR|SUMMARY|Test unit written" \
    | tail -8 || status=1
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
done
exit $status
