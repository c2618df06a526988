#!/usr/bin/env bash
# Builds tilewise on a bare GPU machine (the lent H200: Ubuntu 24.04, CUDA 13, Python 3.12, no network) from
# the working tree plus carried dependencies, then runs the GPU tests and the GPU benchmark.
#   carried: .deps/   Debian 12 libraries and headers unpacked from .deb files (dpkg -x)
#            .whl/    nvidia-nvimgcodec-cu13 0.8 wheel (header + libnvimgcodec.so.0 + extensions)
#            .gpudata/ test and benchmark slides generated on the developer machine
# On the developer machine, prepare them with scripts/gpu-prepare.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
site=/tmp/tw-site
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" .whl/*.whl
export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
libs="$root/.deps/usr/lib/x86_64-linux-gnu"
export PKG_CONFIG_SYSROOT_DIR="$root/.deps"
export PKG_CONFIG_PATH="$libs/pkgconfig:$root/.deps/usr/share/pkgconfig"
# Keep -I<.deps>/usr/include: the machine's own /usr/include may hold other versions of the same headers
# (Ubuntu's libjpeg-turbo 8 jpeglib.h against Debian's libjpeg 62 library crashes at the first decoder).
export PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1 PKG_CONFIG_ALLOW_SYSTEM_LIBS=1
# Debian keeps jconfig.h (which sets JPEG_LIB_VERSION) in the multiarch include folder.
export CPATH="$root/.deps/usr/include/x86_64-linux-gnu:$root/.deps/usr/include"
export LD_LIBRARY_PATH="$libs:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export TILEWISE_NVIMGCODEC_DIR="$site/nvidia/nvimgcodec"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
echo "== build"
CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) python3 -m pip install -q --no-build-isolation --no-deps --upgrade --target "$site" \
  --config-settings=build-dir=/tmp/tw-build \
  --config-settings=cmake.define.TILEWISE_NVIMGCODEC_INCLUDE_DIR="$site/nvidia/nvimgcodec/include" \
  --config-settings=cmake.define.TILEWISE_BUILD_CLI=OFF \
  --config-settings=cmake.define.CMAKE_CUDA_ARCHITECTURES="90-real;90-virtual" .
cd /tmp
python3 -c "import tilewise; tilewise._gpu.configure(); print('gpu_status:', tilewise._core.gpu_status(0) or 'ok')"
echo "== GPU tests"
TILEWISE_GPU_DATA="$root/.gpudata" python3 -m pytest -q -s -p no:cacheprovider "$root/tests/gpu" 2>&1 | tee "${OUT:-/tmp}/gpu-tests.log" | tail -40
echo "== GPU benchmark"
TILEWISE_GPU_DATA="$root/.gpudata" python3 "$root/bench/bench_gpu.py" 2>&1 | tee "${OUT:-/tmp}/gpu-bench.log"
