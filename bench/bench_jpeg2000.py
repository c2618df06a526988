"""Random-patch workload on an Aperio-like JPEG 2000 slide (compression 33003, YCbCr components, 240x240
tiles): tilewise against OpenSlide and tiffslide, 1 thread and N threads, caches off."""

from __future__ import annotations

import os

import numpy as np

import tilewise
from common import bench_parser, DATA, REPO, Table, publish, read_all, slidegen, time_runs

import sys
sys.path.insert(0, str(REPO / "tests" / "data"))
import vendor_tiff  # noqa: E402

try:
    import openslide
except ImportError:
    openslide = None
try:
    import tiffslide
except ImportError:
    tiffslide = None


def aperio_j2k_slide(size: int) -> "os.PathLike":
    DATA.mkdir(parents=True, exist_ok=True)
    path = DATA / f"aperio_j2k_{size}.svs"
    if not path.exists():
        print(f"generating {path.name} ...", flush=True)
        tmp = path.with_suffix(".partial.svs")
        vendor_tiff.write_aperio(tmp, slidegen.ihc_tissue(size, size, seed=2), codec="j2k-ycbcr", tile=240,
                                 downsamples=(4,))
        tmp.rename(path)
    return path


def main() -> None:
    ap = bench_parser(reps=5, size=8160, patches=300)
    args = ap.parse_args()
    if args.quick:
        args.size, args.patches, args.reps = 2400, 60, 3
    path = aperio_j2k_slide(args.size)
    slide = tilewise.open(path)
    w0, h0 = slide.dimensions
    bpp = slidegen.bits_per_pixel(path)
    ncores = os.cpu_count() or 1
    table = Table(f"CPU, {ncores} cores: {path.name} ({w0}x{h0}, Aperio JPEG 2000 33003, 240x240 tiles, "
                  f"{bpp:.2f} bits/pixel)")
    rng = np.random.default_rng(0)
    locs = [(int(rng.integers(0, w0 - 256)), int(rng.integers(0, h0 - 256))) for _ in range(args.patches)]
    tilewise.set_cache_capacity(0)
    tilewise.set_worker_threads(1)

    def run(read, threads):
        read_all(read, locs, threads)

    for threads in (1, ncores):
        name = f"random 256x256, {threads} thread{'s' if threads > 1 else ''}, cold"
        t = time_runs(lambda: run(lambda loc: slide.read_region(loc, (256, 256)), threads), args.reps)
        table.add(name, "tilewise", len(locs) / t["median"], len(locs) / t["max"], len(locs) / t["min"], "patches/s")
        if openslide:
            osr = openslide.OpenSlide(str(path))
            osr.set_cache(openslide.OpenSlideCache(0))
            t = time_runs(lambda: run(lambda loc: np.asarray(osr.read_region(loc, 0, (256, 256))), threads),
                          max(3, args.reps // 2))
            table.add(name, "OpenSlide", len(locs) / t["median"], len(locs) / t["max"], len(locs) / t["min"], "patches/s")
        if tiffslide:
            ts = tiffslide.TiffSlide(str(path))
            t = time_runs(lambda: run(lambda loc: ts.read_region(loc, 0, (256, 256), as_array=True), threads),
                          max(3, args.reps // 2))
            table.add(name, "tiffslide", len(locs) / t["median"], len(locs) / t["max"], len(locs) / t["min"],
                      "patches/s", "no YCbCr conversion")
    tilewise.set_worker_threads(0)
    publish(table, "jpeg2000.md")


if __name__ == "__main__":
    main()
