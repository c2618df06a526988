#!/usr/bin/env bash
# Prepares, on the developer machine, what scripts/gpu/test.sh needs on the lent GPU machine (no network,
# no apt), in one git-ignored folder that travels with `carry: [".gpu"]` (64 MiB at most; xz keeps it ~50):
#   .gpu/deps.tar.xz           Debian 12 libraries and headers (libjpeg-turbo, OpenJPEG, libdeflate, zstd,
#                              pugixml, OpenSSL, CharLS, libpng, SQLite, jxrlib, Little CMS; libcurl's and nlohmann-json's headers) and GoogleTest (static, for the GPU's C++ tests), unpacked
#                              from .deb files
#   .gpu/site-tilewise.tar.xz  nvidia-nvimgcodec-cu13 0.8 (core, JPEG and JPEG 2000 extensions, header, the
#                              cp312 Python module) + nvidia-nvjpeg2k-cu13, in site-packages layout
#   .gpu/site-cucim.tar.xz     cucim-cu13 26.10 + nvidia-nvimgcodec-cu13 0.9 (which it requires) +
#                              nvidia-nvjpeg2k-cu13 + nvidia-nvtiff-cu13: the baseline of bench/bench_gpu.py,
#                              in its own site
#   .gpu/prof/                 gperftools' CPU profiler and google-pprof (Debian's), unpacked
#   .gpu/data/                 test and benchmark slides, and Orthanc's DICOMweb answers for two DICOM series
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rm -rf .gpu && mkdir -p .gpu/data

echo "== Debian libraries"
mkdir -p "$tmp/debs" "$tmp/deps"
(cd "$tmp/debs" && apt-get download libjpeg62-turbo libjpeg62-turbo-dev libopenjp2-7 libopenjp2-7-dev libdeflate0 \
  libdeflate-dev libzstd1 libzstd-dev libpugixml1v5 libpugixml-dev libssl3 libssl-dev libgtest-dev libcharls2 libcharls-dev \
  libpng16-16 libpng-dev zlib1g zlib1g-dev libsqlite3-0 libsqlite3-dev libjxr0 libjxr-dev libcurl4-openssl-dev \
  liblcms2-2 liblcms2-dev nlohmann-json3-dev >/dev/null 2>&1)
for f in "$tmp"/debs/*.deb; do dpkg -x "$f" "$tmp/deps"; done
# libcurl: Debian's headers only; the machine's own libcurl.so.4 (Ubuntu's, same ABI) is linked and loaded.
rm -f "$tmp"/deps/usr/lib/x86_64-linux-gnu/libcurl.so
find "$tmp/deps" -name "*.a" ! -name "libgtest*.a" -delete
rm -rf "$tmp/deps/usr/share/doc" "$tmp/deps/usr/share/man" "$tmp/deps/usr/bin"
tar -C "$tmp/deps" -cJf .gpu/deps.tar.xz .

echo "== profiler"
# gperftools' sampling CPU profiler and google-pprof (perl): the lent machine has no perf
# (scripts/gpu/measure.sh prof).
mkdir -p "$tmp/prof-debs" .gpu/prof
(cd "$tmp/prof-debs" && apt-get download libgoogle-perftools4 libtcmalloc-minimal4 libunwind8 google-perftools >/dev/null 2>&1)
for f in "$tmp"/prof-debs/*.deb; do dpkg -x "$f" .gpu/prof; done
rm -rf .gpu/prof/usr/share

echo "== wheels"
pipdl() {
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d "$tmp/whl" "$1"
}
pipdl "nvidia-nvimgcodec-cu13>=0.8,<0.9"
pipdl "nvidia-nvimgcodec-cu13>=0.9,<0.10"
pipdl "nvidia-nvjpeg2k-cu13"
pipdl "nvidia-nvtiff-cu13"
pipdl "cucim-cu13==26.10.*"
# A wheel unpacked into a site folder, less the Python modules built for other interpreters.
unpack() {
  unzip -qq -o "$1" -d "$2" -x 'nvidia/nvimgcodec/tools/*' 'nvidia/nvimgcodec/extensions/libopencv_ext*' || [ $? -eq 11 ]
  find "$2" -name 'nvimgcodec_impl.cpython-*' ! -name '*cpython-312-*' -delete
}
mkdir -p "$tmp/tw" "$tmp/cucim"
unpack "$tmp"/whl/nvidia_nvimgcodec_cu13-0.8*.whl "$tmp/tw"
unpack "$tmp"/whl/nvidia_nvjpeg2k_cu13-*.whl "$tmp/tw"
tar -C "$tmp/tw" -cJf .gpu/site-tilewise.tar.xz .
unpack "$tmp"/whl/nvidia_nvimgcodec_cu13-0.9*.whl "$tmp/cucim"
unpack "$tmp"/whl/nvidia_nvjpeg2k_cu13-*.whl "$tmp/cucim"
unpack "$tmp"/whl/nvidia_nvtiff_cu13-*.whl "$tmp/cucim"  # cuslide2 parses TIFF through nvImageCodec's nvTIFF
unpack "$tmp"/whl/cucim_cu13-*.whl "$tmp/cucim"
rm -rf "$tmp/cucim/cucim/skimage"  # the image-processing half of cuCIM: not used by the benchmark
tar -C "$tmp/cucim" -cJf .gpu/site-cucim.tar.xz .

echo "== slides"
.venv/bin/python - <<'PY'
import sys
sys.path.insert(0, "tests/data")
import dicom_wsi, slidegen, vendor_tiff
d = ".gpu/data/"
im = slidegen.tissue_image(2048, 1536, seed=31)
slidegen.write_tifffile_pyramid(d + "tifffile_jpeg.tif", im, compression="jpeg", tile=(256, 256), levels=3)
slidegen.write_vips_pyramid(d + "vips_jpeg.tif", im)
vendor_tiff.write_aperio(d + "aperio_rgb.svs", im[:1024, :1536], codec="jpeg-rgb", tile=240, downsamples=(4,))
vendor_tiff.write_aperio(d + "aperio_j2k_ycbcr.svs", im[:1024, :1280], codec="j2k-ycbcr", tile=240, downsamples=(4,))
vendor_tiff.write_aperio(d + "aperio_j2k_rgb.svs", im[:768, :1024], codec="j2k-rgb", tile=240, downsamples=(4,))
slidegen.write_tifffile_pyramid(d + "deflate.tif", im[:768, :1024], compression="deflate", tile=(256, 256), levels=2)
slidegen.write_damaged_slide(d + "damaged.tif")
slidegen.write_vips_pyramid(d + "bench_ihc_6144.tif", slidegen.ihc_tissue(6144, 6144, seed=1), quality=80)
ihc = slidegen.ihc_tissue(3840, 3840, seed=2)
vendor_tiff.write_aperio(d + "bench_j2k_3840.svs", ihc, codec="j2k-ycbcr", tile=240, downsamples=(4,))
for codec, folder in (("jpeg", "dicom_jpeg"), ("jpeg2000", "dicom_j2k"), ("jpegls", "dicom_jpegls")):
    dicom_wsi.write_series(d + folder, im[:1024, :1536], levels=2, codec=codec, associated=codec == "jpeg")
# Formats IV: positioned grids (MIRAX, Leica, Ventana BIF, Trestle) and Sakura's channel planes.
import czi, leica, mirax, sakura, trestle, ventana
small = im[:1024, :1536]
mirax.write_mirax(d + "mirax_jpeg/slide.mrxs", small, tile=128, fmt="JPEG", levels=4)
mirax.write_mirax(d + "mirax_png/slide.mrxs", small[:512, :768], tile=128, fmt="PNG", levels=3)
leica.write_scn(d + "leica.scn", small, [(32, 32, 640, 512), (700, 400, 768, 576)], compression="jpeg")
ventana.write_bif(d + "ventana.bif", small, [(40, 36, 6, 4), (800, 480, 4, 3)], compression="jpeg")
trestle.write_trestle(d + "trestle.tif", small)
sakura.write_svslide(d + "sakura.svslide", small, tile=128, levels=3)
czi.write_czi(d + "zeiss.czi", small, compression=6, overlap=(16, 8), scenes=((0, 0, 5, 3), (700, 400, 4, 3)))
# Channels and planes of the GPU's grey decoders: Olympus VSI of 3 channels x 2 focal planes, a gradient
# with a little noise, in grey JPEG 2000 (16-bit, 12-bit precision, 8-bit) and grey JPEG.
import numpy as np
import vsi
rng = np.random.default_rng(7)
yy, xx = np.mgrid[0:600, 0:800]
smooth = (xx * 3 + yy * 2) / (800 * 3 + 600 * 2)
for codec, dtype in (("j2k", np.uint16), ("j2k12", np.uint16), ("j2k", np.uint8), ("jpeg", np.uint8)):
    top = 4095 if codec == "j2k12" else np.iinfo(dtype).max
    world = np.stack([np.stack([(smooth * 0.97 + rng.random((600, 800)) * 0.03) * top * (c + 1) / 3
                                for _ in range(2)]) for c in range(3)]).astype(dtype)
    vsi.write_vsi(d + f"planes_{codec}_{np.dtype(dtype).name}.vsi", world, tile=128, codec=codec)
# The same of 512-pixel tiles, 2 channels of 2,048 x 1,536 (bench/diag/planes_gpu_time.py).
rng = np.random.default_rng(3)
yy, xx = np.mgrid[0:1536, 0:2048]
smooth = (xx * 3 + yy * 2) / (2048 * 3 + 1536 * 2)
world = np.stack([np.stack([(smooth * 0.98 + rng.random((1536, 2048)) * 0.02) * 65535 * (c + 1) / 2])
                  for c in range(2)]).astype(np.uint16)
vsi.write_vsi(d + "big_j2k_uint16.vsi", world, tile=512, codec="j2k")
vsi.write_vsi(d + "big_jpeg_uint8.vsi", (world >> 8).astype(np.uint8), tile=512, codec="jpeg")
PY

echo "== DICOMweb answers"
# Orthanc's answers (instance list, metadata, frames) for two of the series above, served again on the lent
# machine, which has no Orthanc, by tests/data/dicomweb_replay.py.
.venv/bin/python - <<'PY'
import sys, tempfile, urllib.request
from pathlib import Path
sys.path[:0] = ["tests/data", "tests/python"]
import pydicom
from dicomweb_replay import record
from orthanc_server import OrthancServer
server = OrthancServer(Path(tempfile.mkdtemp()) / "orthanc")
try:
    for name in ("dicom_jpeg", "dicom_j2k"):
        files = sorted(Path(".gpu/data", name).glob("*.dcm"))
        for f in files:
            urllib.request.urlopen(urllib.request.Request(server.url + "/instances", data=f.read_bytes(), method="POST"))
        ds = pydicom.dcmread(files[0], stop_before_pixels=True)
        record(f"{server.dicomweb_url}/studies/{ds.StudyInstanceUID}/series/{ds.SeriesInstanceUID}",
               Path(".gpu/data/dicomweb", name))
finally:
    server.stop()
PY
du -sh .gpu/* .gpu
