#!/usr/bin/env bash
# Prepares, on the developer machine, what scripts/gpu-test.sh needs on the lent GPU machine (which has no
# network): Debian libraries and headers unpacked into .deps/, the nvImageCodec 0.8 wheel in .whl/, and
# test/benchmark slides in .gpudata/. All three are git-ignored and travel with `carry`.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
(cd "$tmp" && apt-get download libjpeg62-turbo libjpeg62-turbo-dev libopenjp2-7 libopenjp2-7-dev libdeflate0 \
  libdeflate-dev libzstd1 libzstd-dev libpugixml1v5 libpugixml-dev libssl3 libssl-dev >/dev/null 2>&1)
rm -rf .deps && mkdir -p .deps
for f in "$tmp"/*.deb; do dpkg -x "$f" .deps; done
find .deps -name "*.a" -delete
rm -rf .deps/usr/share/doc .deps/usr/share/man .deps/usr/bin "$tmp"
mkdir -p .whl
rm -f .whl/*.whl
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 -d .whl "nvidia-nvimgcodec-cu13>=0.8,<0.9"
mkdir -p .gpudata
.venv/bin/python - <<'PY'
import sys
sys.path.insert(0, "tests/data")
import slidegen, vendor_tiff
im = slidegen.tissue_image(2048, 1536, seed=31)
slidegen.write_tifffile_pyramid(".gpudata/tifffile_jpeg.tif", im, compression="jpeg", tile=(256, 256), levels=3)
slidegen.write_vips_pyramid(".gpudata/vips_jpeg.tif", im)
vendor_tiff.write_aperio(".gpudata/aperio_rgb.svs", im[:1024, :1536], codec="jpeg-rgb", tile=240, downsamples=(4,))
slidegen.write_tifffile_pyramid(".gpudata/deflate.tif", im[:768, :1024], compression="deflate", tile=(256, 256), levels=2)
slidegen.write_vips_pyramid(".gpudata/bench_ihc_6144.tif", slidegen.ihc_tissue(6144, 6144, seed=1), quality=80)
PY
du -sh .deps .whl .gpudata
