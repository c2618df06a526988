#!/usr/bin/env bash
# Builds tilewise on a bare GPU machine (the lent H200: Ubuntu 24.04, CUDA 13, Python 3.12, no network) from
# the working tree plus the carried .gpu/ folder (made on the developer machine by scripts/gpu/prepare.sh),
# then runs the GPU tests and the GPU benchmark (against cuCIM's GPU path and the raw
# nvImageCodec ceiling), printing their tables. Logs go to $OUT when set.
#   usage: scripts/gpu/test.sh [tests|bench|cucim|all]   (default all; cucim: only cuCIM's rows of the benchmark)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
what=${1:-all}
out=${OUT:-/tmp/tw-out}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
deps=/tmp/tw-deps site=/tmp/tw-site cucim_site=/tmp/cucim-site
for pair in "deps.tar.xz:$deps" "site-tilewise.tar.xz:$site" "site-cucim.tar.xz:$cucim_site"; do
  # cuCIM's site is only for the benchmark's baseline: a tests-only run may leave it behind (carry less).
  [ "${pair%%:*}" = site-cucim.tar.xz ] && [ ! -f .gpu/site-cucim.tar.xz ] && continue
  mkdir -p "${pair#*:}" && tar -C "${pair#*:}" -xJf ".gpu/${pair%%:*}"
done
export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
libs="$deps/usr/lib/x86_64-linux-gnu"
export PKG_CONFIG_SYSROOT_DIR="$deps"
export PKG_CONFIG_PATH="$libs/pkgconfig:$deps/usr/share/pkgconfig"
# Keep -I<deps>/usr/include: the machine's own /usr/include may hold other versions of the same headers
# (Ubuntu's libjpeg-turbo 8 jpeglib.h against Debian's libjpeg 62 library crashes at the first decoder).
export PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1 PKG_CONFIG_ALLOW_SYSTEM_LIBS=1
# Debian keeps jconfig.h (which sets JPEG_LIB_VERSION) in the multiarch include folder.
export CPATH="$deps/usr/include/x86_64-linux-gnu:$deps/usr/include" LIBRARY_PATH="$libs"
export LD_LIBRARY_PATH="$libs:$site/nvidia/nvjpeg2k/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export TILEWISE_NVIMGCODEC_DIR="$site/nvidia/nvimgcodec"
export TILEWISE_GPU_DATA="$root/.gpu/data" TILEWISE_CUCIM_SITE="$cucim_site"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
echo "== build"
CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) python3 -m pip install -q --no-build-isolation --no-deps --upgrade --target "$site" \
  --config-settings=build-dir=/tmp/tw-build --config-settings=install.strip=false \
  --config-settings=cmake.define.TILEWISE_NVIMGCODEC_INCLUDE_DIR="$site/nvidia/nvimgcodec/include" \
  --config-settings=cmake.define.TILEWISE_BUILD_CLI=OFF \
  --config-settings=cmake.define.TILEWISE_REQUIRE_CURL=OFF \
  --config-settings=cmake.define.TILEWISE_BUILD_BENCH=ON \
  --config-settings=cmake.define.CMAKE_CUDA_ARCHITECTURES="90-real;90-virtual" . 2>&1 | tail -20
cd /tmp
python3 -c "import tilewise; tilewise._gpu.configure(); print('gpu_status:', tilewise._core.gpu_status(0))"
# scripts/gpu/ab.sh sources this script for the environment and the build of the working tree only.
if [ "${AB_ONLY_SETUP:-0}" = 1 ]; then cd "$root"; return 0; fi
if [ "$what" = cucim ]; then
  echo "== cuCIM's GPU path, each workload in its own process"
  python3 "$root/bench/bench_gpu.py" --cucim-only 2>&1 | tee "$out/gpu-cucim.log"
  exit 0
fi
if [ "$what" != bench ]; then
  echo "== C++ GPU tests (the decoder conformance suite on nvImageCodec, its encoders; the GPU layer's tests)"
  cmake -S "$root" -B /tmp/tw-ctest -G Ninja -DCMAKE_BUILD_TYPE=Release -DTILEWISE_BUILD_TESTS=ON \
    -DTILEWISE_BUILD_PYTHON=OFF -DTILEWISE_BUILD_CLI=OFF -DTILEWISE_BUILD_CATALOGUE_TEST=OFF -DTILEWISE_REQUIRE_CURL=OFF \
    -DTILEWISE_NVIMGCODEC_INCLUDE_DIR="$site/nvidia/nvimgcodec/include" -DCMAKE_PREFIX_PATH="$deps/usr" \
    -DCMAKE_CUDA_ARCHITECTURES="90-real;90-virtual" > "$out/ctest-configure.log" 2>&1 &&
    cmake --build /tmp/tw-ctest --target nvimgcodec_conformance_test nvimgcodec_encoder_test gpu_test > "$out/ctest-build.log" 2>&1 &&
    { /tmp/tw-ctest/tests/cpp/nvimgcodec_conformance_test; /tmp/tw-ctest/tests/cpp/nvimgcodec_encoder_test; /tmp/tw-ctest/tests/cpp/gpu_test; } 2>&1 |
    tee "$out/ctest.log" | grep -E "^\[  (PASSED|FAILED|SKIPPED) |Failure|OK \]" | tail -30 ||
    { echo "C++ GPU tests did not build"; tail -20 "$out/ctest-configure.log" "$out/ctest-build.log"; }
  echo "== GPU tests"
  # A failing test is reported; the benchmark still runs.
  python3 -m pytest -q -s -p no:cacheprovider "$root/tests/gpu" 2>&1 | tee "$out/gpu-tests.log" | tail -40 || true
fi
if [ "$what" != tests ]; then
  echo "== GPU benchmark"
  python3 "$root/bench/bench_gpu.py" 2>&1 | tee "$out/gpu-bench.log"
fi
