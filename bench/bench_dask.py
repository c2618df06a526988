"""Ecosystem: a slide level read through dask.array (tilewise.dask.level: tile-aligned ~1024^2 chunks, and
one tile per chunk), 1 worker against N (threads), and the same through zarr (Slide.zarr(), one tile per
chunk, + dask.array.from_zarr). Each chunk read is
single-threaded (set_worker_threads(1)), so the scaling is dask's. Caches off. Reports MPix/s and scaling
efficiency against 1 worker (target: >= 0.85 x N)."""

from __future__ import annotations

import os

import numpy as np

import tilewise
import tilewise.dask
from common import bench_parser, OUT, Table, benchmark_slide, time_runs


def main() -> None:
    import dask
    import dask.array as da

    ap = bench_parser(reps=5, size=20480)
    ap.add_argument("--level", type=int, default=1)
    args = ap.parse_args()
    if args.quick:
        args.size, args.reps = 8192, 3
    slide = tilewise.open(benchmark_slide(args.size))
    level = min(args.level, slide.level_count - 1)
    w, h = slide.levels[level].dimensions
    mpix = w * h / 1e6
    tilewise.set_cache_capacity(0)
    tilewise.set_worker_threads(1)
    ncores = os.cpu_count() or 1
    table = Table(f"dask: level {level} ({w}x{h}) of {slide.path.split('/')[-1]}, sum of every pixel, caches off; "
                  f"{ncores} cores")
    expected = int(slide.read_level_region((0, 0), (w, h), level=level).sum(dtype=np.int64))
    rates = {}
    tw, th = slide.levels[level].tile_size
    for source in ("tilewise.dask.level", "tilewise.dask.level, one tile per chunk", "dask.array.from_zarr(slide.zarr())"):
        for workers in sorted({1, ncores}):
            def run():
                if source == "tilewise.dask.level":
                    arr = tilewise.dask.level(slide, level)
                elif source.startswith("tilewise"):
                    arr = tilewise.dask.level(slide, level, chunks=(th, tw))
                else:
                    arr = da.from_zarr(slide.zarr()[str(level)])
                with dask.config.set(scheduler="threads", num_workers=workers):
                    assert int(arr.sum(dtype=np.int64).compute()) == expected
            r = time_runs(run, args.reps)
            rates[(source, workers)] = mpix / r["median"]
            note = "" if workers == 1 else f"scaling {rates[(source, workers)] / rates[(source, 1)] / workers:.2f} x N"
            table.add(f"level {level} sum, {workers} worker(s)", source, mpix / r["median"], mpix / r["max"],
                      mpix / r["min"], "MPix/s", note)
    tilewise.set_worker_threads(0)
    print(table.markdown())
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "bench_dask.md").write_text(table.markdown())


if __name__ == "__main__":
    main()
