"""Workload 3: the batch loader. 2,000 random 256x256 level-0 locations, batch 64, workers 1..N:
tilewise.read_regions vs cuCIM's CuImage.read_region iterator (CPU path) vs OpenSlide with a thread pool.
Caches off for every tool. Reports patches/s and scaling efficiency against 1 worker."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import tilewise
from common import bench_parser, Table, benchmark_slide, publish, slidegen, time_runs

try:
    import openslide
except ImportError:
    openslide = None
try:
    from cucim import CuImage
except ImportError:
    CuImage = None


def main() -> None:
    ap = bench_parser(reps=5, size=20480, patches=2000)
    args = ap.parse_args()
    if args.quick:
        args.size, args.patches, args.reps = 8192, 500, 3
    path = benchmark_slide(args.size)
    ncores = os.cpu_count() or 1
    slide = tilewise.open(path)
    w0, h0 = slide.dimensions
    rng = np.random.default_rng(0)
    locs = np.stack([rng.integers(0, w0 - 256, args.patches), rng.integers(0, h0 - 256, args.patches)], axis=1)
    table = Table(f"CPU, {ncores} cores: batch loader, {args.patches} random 256x256 L0 patches, batch 64, "
                  f"{path.name} ({slidegen.bits_per_pixel(path):.2f} bits/pixel)")
    tilewise.set_cache_capacity(0)
    n = len(locs)
    base = {}
    workers_list = sorted({1, 2, ncores})
    for workers in workers_list:
        name = f"3. loader, {workers} worker{'s' if workers > 1 else ''}"

        def run_tilewise():
            for _ in slide.read_regions(locs, (256, 256), batch_size=64, num_workers=workers, prefetch=2):
                pass

        tilewise.set_worker_threads(1)  # parallelism across patches only, like the other tools
        t = time_runs(run_tilewise, args.reps)
        tilewise.set_worker_threads(0)
        rate = n / t["median"]
        base.setdefault("tilewise", rate)
        table.add(name, "tilewise", rate, n / t["max"], n / t["min"], "patches/s",
                  f"scaling {rate / base['tilewise'] / workers:.2f}")
        if CuImage is not None:
            img = CuImage(str(path))
            CuImage.cache("nocache")
            flat = locs.reshape(-1).tolist()

            def run_cucim():
                for _ in img.read_region(flat, (256, 256), batch_size=64, num_workers=workers, prefetch_factor=2):
                    pass

            t = time_runs(run_cucim, max(3, args.reps // 2))
            rate = n / t["median"]
            base.setdefault("cucim", rate)
            table.add(name, "cuCIM (CPU)", rate, n / t["max"], n / t["min"], "patches/s",
                      f"scaling {rate / base['cucim'] / workers:.2f}")
        if openslide is not None:
            osr = openslide.OpenSlide(str(path))
            osr.set_cache(openslide.OpenSlideCache(0))

            def run_openslide():
                with ThreadPoolExecutor(workers) as pool:
                    list(pool.map(lambda loc: np.asarray(osr.read_region((int(loc[0]), int(loc[1])), 0, (256, 256))),
                                  locs))

            t = time_runs(run_openslide, max(3, args.reps // 2))
            rate = n / t["median"]
            base.setdefault("openslide", rate)
            table.add(name, "OpenSlide + threads", rate, n / t["max"], n / t["min"], "patches/s",
                      f"scaling {rate / base['openslide'] / workers:.2f}")
    publish(table, "loader.md")


if __name__ == "__main__":
    main()
