"""CPU benchmarks, workloads 1, 2 and 4 of docs (shared/docs/benchmarks.md):

1. large regions (4096^2 and 8192^2 at level 0, and a whole low level): MPix/s
2. random unaligned 256x256 and 224x224 patches: patches/s, 1 thread and N threads, cold and warm cache
4. whole-slide tiling: every tile-aligned 256x256 patch of level 0: MPix/s

against OpenSlide (openslide-python + openslide-bin), tiffslide when installed, and the libjpeg-turbo
decode ceiling on the same tiles. Caches of every tool are off for "cold" runs (OpenSlide: OpenSlideCache(0)).
"""

from __future__ import annotations

import os
import platform
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import tilewise
from common import bench_parser, Table, benchmark_slide, commit, jpeg_ceiling, jpeg_tiles, publish, slidegen, time_runs

try:
    import openslide
except ImportError:  # pragma: no cover
    openslide = None
try:
    import tiffslide
except ImportError:
    tiffslide = None


def rate(units: float, t: dict, scale: float = 1.0):
    return units / t["median"] / scale, units / t["max"] / scale, units / t["min"] / scale


def openslide_handle(path, cache_bytes: int):
    osr = openslide.OpenSlide(str(path))
    osr.set_cache(openslide.OpenSlideCache(cache_bytes))
    return osr


def read_openslide(osr, loc, level, size):
    return np.asarray(osr.read_region(loc, level, size))


def main() -> None:
    ap = bench_parser(reps=5, size=20480, patches=1000)
    args = ap.parse_args()
    if args.quick:
        args.size, args.reps, args.patches = 8192, 3, 200
    ncores = os.cpu_count() or 1
    path = benchmark_slide(args.size)
    bpp = slidegen.bits_per_pixel(path)
    slide = tilewise.open(path)
    w0, h0 = slide.dimensions
    table = Table(f"CPU, {ncores} cores: {path.name} ({w0}x{h0}, JPEG q80 4:2:0, 256x256 tiles, {bpp:.2f} bits/pixel)")
    rng = np.random.default_rng(0)

    # --- 1. large regions -------------------------------------------------------------------------
    tilewise.set_cache_capacity(0)
    for side in (4096, 8192):
        if side > min(w0, h0):
            continue
        loc = ((w0 - side) // 2 // 256 * 256, (h0 - side) // 2 // 256 * 256)  # tile-aligned: same tiles as the ceiling
        name = f"1. region {side}x{side} L0"
        for threads in (ncores, 1):
            tilewise.set_worker_threads(threads)
            t = time_runs(lambda: slide.read_region(loc, (side, side)), args.reps)
            table.add(name, f"tilewise ({threads} thr)", *rate(side * side, t, 1e6), "MPix/s")
        tilewise.set_worker_threads(0)
        cols = range(loc[0] // 256, (loc[0] + side) // 256)
        rows = range(loc[1] // 256, (loc[1] + side) // 256)
        across = (w0 + 255) // 256
        tiles = jpeg_tiles(path, 0, [r * across + c for r in rows for c in cols])
        c1 = jpeg_ceiling(tiles, 1, args.reps)
        table.add(name, "libjpeg-turbo ceiling (1 core)", c1["mpix_per_s"],
                  c1["pixels"] / c1["max_s"] / 1e6, c1["pixels"] / c1["min_s"] / 1e6, "MPix/s")
        cn = jpeg_ceiling(tiles, ncores, args.reps)
        table.add(name, f"libjpeg-turbo ceiling ({ncores} cores)", cn["mpix_per_s"],
                  cn["pixels"] / cn["max_s"] / 1e6, cn["pixels"] / cn["min_s"] / 1e6, "MPix/s")
        if openslide:
            osr = openslide_handle(path, 0)
            t = time_runs(lambda: read_openslide(osr, loc, 0, (side, side)), max(3, args.reps // 2))
            table.add(name, "OpenSlide", *rate(side * side, t, 1e6), "MPix/s")
    low = next(i for i, lv in enumerate(slide.levels) if lv.dimensions[0] <= 6000)
    lw, lh = slide.levels[low].dimensions
    name = f"1. whole level {low} ({lw}x{lh})"
    t = time_runs(lambda: slide.read_region((0, 0), (lw, lh), level=low), args.reps)
    table.add(name, f"tilewise ({ncores} thr)", *rate(lw * lh, t, 1e6), "MPix/s")
    if openslide:
        osr = openslide_handle(path, 0)
        t = time_runs(lambda: read_openslide(osr, (0, 0), low, (lw, lh)), max(3, args.reps // 2))
        table.add(name, "OpenSlide", *rate(lw * lh, t, 1e6), "MPix/s")

    # --- 2. random patches ------------------------------------------------------------------------
    for psize in (256, 224):
        locs = [(int(rng.integers(0, w0 - psize)), int(rng.integers(0, h0 - psize))) for _ in range(args.patches)]
        warm_locs = locs[: max(50, args.patches // 4)]
        for threads in (1, ncores):
            label = f"{threads} thread{'s' if threads > 1 else ''}"
            tilewise.set_worker_threads(1)  # parallelism comes from the callers' threads only

            def run_tilewise(ls):
                if threads == 1:
                    for loc in ls:
                        slide.read_region(loc, (psize, psize))
                else:
                    with ThreadPoolExecutor(threads) as pool:
                        list(pool.map(lambda loc: slide.read_region(loc, (psize, psize)), ls))

            def run_openslide(osr, ls):
                if threads == 1:
                    for loc in ls:
                        read_openslide(osr, loc, 0, (psize, psize))
                else:
                    with ThreadPoolExecutor(threads) as pool:
                        list(pool.map(lambda loc: read_openslide(osr, loc, 0, (psize, psize)), ls))

            def run_tiffslide(ts, ls):
                if threads == 1:
                    for loc in ls:
                        ts.read_region(loc, 0, (psize, psize), as_array=True)
                else:
                    with ThreadPoolExecutor(threads) as pool:
                        list(pool.map(lambda loc: ts.read_region(loc, 0, (psize, psize), as_array=True), ls))

            name = f"2. random {psize}x{psize}, {label}, cold"
            tilewise.set_cache_capacity(0)
            t = time_runs(lambda: run_tilewise(locs), args.reps)
            table.add(name, "tilewise", *rate(len(locs), t), "patches/s")
            if openslide:
                osr = openslide_handle(path, 0)
                t = time_runs(lambda: run_openslide(osr, locs), max(3, args.reps // 2))
                table.add(name, "OpenSlide", *rate(len(locs), t), "patches/s")
            if tiffslide:
                ts = tiffslide.TiffSlide(str(path))
                t = time_runs(lambda: run_tiffslide(ts, locs), max(3, args.reps // 2))
                table.add(name, "tiffslide", *rate(len(locs), t), "patches/s")

            name = f"2. random {psize}x{psize}, {label}, warm"
            tilewise.set_cache_capacity(1 << 30)
            # Two warm-up passes: tilewise admits a tile to its cache on the second request.
            t = time_runs(lambda: run_tilewise(warm_locs), args.reps, warmup=2)
            table.add(name, "tilewise", *rate(len(warm_locs), t), "patches/s")
            if openslide:
                osr = openslide_handle(path, 1 << 30)
                t = time_runs(lambda: run_openslide(osr, warm_locs), args.reps)
                table.add(name, "OpenSlide", *rate(len(warm_locs), t), "patches/s")
    tilewise.set_worker_threads(0)

    # --- 4. whole-slide tiling --------------------------------------------------------------------
    tilewise.set_cache_capacity(0)
    grid = [(x, y) for y in range(0, h0 - 255, 256) for x in range(0, w0 - 255, 256)]
    name = f"4. tiling {len(grid)} aligned 256x256 L0, {ncores} threads"
    tilewise.set_worker_threads(1)

    rows = [[loc for loc in grid if loc[1] == y] for y in sorted({loc[1] for loc in grid})]

    def tile_all(read):
        # Inference-style sweep: each worker thread takes whole rows of patches.
        with ThreadPoolExecutor(ncores) as pool:
            list(pool.map(lambda row: [read(loc) for loc in row], rows))

    t = time_runs(lambda: tile_all(lambda loc: slide.read_region(loc, (256, 256))), max(3, args.reps // 2))
    table.add(name, "tilewise", *rate(len(grid) * 65536, t, 1e6), "MPix/s", "read_region from threads")
    grid_array = np.array(grid, dtype=np.int64)

    def sweep():
        for _ in slide.read_regions(grid_array, (256, 256), batch_size=64, num_workers=ncores, prefetch=2):
            pass

    t = time_runs(sweep, max(3, args.reps // 2))
    table.add(name, "tilewise (loader)", *rate(len(grid) * 65536, t, 1e6), "MPix/s", "read_regions, batch 64")
    tilewise.set_worker_threads(0)
    if openslide:
        osr = openslide_handle(path, 0)
        t = time_runs(lambda: tile_all(lambda loc: read_openslide(osr, loc, 0, (256, 256))), 3, warmup=0)
        table.add(name, "OpenSlide", *rate(len(grid) * 65536, t, 1e6), "MPix/s")
    cn = jpeg_ceiling(jpeg_tiles(path, 0), ncores, 3)
    table.add(name, f"libjpeg-turbo ceiling ({ncores} cores)", cn["mpix_per_s"],
              cn["pixels"] / cn["max_s"] / 1e6, cn["pixels"] / cn["min_s"] / 1e6, "MPix/s")

    header = (f"machine: {platform.machine()}, {ncores} cores, {platform.processor() or platform.platform()}; "
              f"commit {commit()}; OpenSlide {openslide.__library_version__ if openslide else 'absent'}; "
              f"tiffslide {tiffslide.__version__ if tiffslide else 'absent'}\n\n")
    publish(table, "cpu.md", header)


if __name__ == "__main__":
    main()
