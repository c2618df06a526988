"""Ecosystem: a cohort run on dask.distributed (tilewise.dask.map_patches): a per-patch function over the
256 x 256 patch grid of 8 generated slides, on a LocalCluster of 1 and of 2 worker processes (one thread
each, TILEWISE_NUM_THREADS=1), against the same run on this process's synchronous scheduler; the results
must be equal. Reports patches/s and the scaling of 2 workers against 1."""

from __future__ import annotations

import os
import time

import numpy as np

import tilewise
import tilewise.dask
from common import bench_parser, DATA, OUT, Table, slidegen


def tissue_stats(patch):
    """The per-patch function: mean colour and the fraction of dark (stained) pixels."""
    rgb = patch.reshape(-1, 3).astype(np.float32)
    return [float(v) for v in rgb.mean(axis=0)] + [float((rgb.mean(axis=1) < 160).mean())]


def cohort(n: int, size: int) -> list:
    DATA.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(n):
        path = DATA / f"cohort_{size}_{i}.tif"
        if not path.exists():
            slidegen.write_vips_pyramid(path, slidegen.ihc_tissue(size, size, seed=100 + i), quality=80)
        paths.append(str(path))
    return paths


def main() -> None:
    import dask
    from distributed import Client, LocalCluster

    ap = bench_parser(reps=3, size=4096)
    ap.add_argument("--slides", type=int, default=8)
    args = ap.parse_args()
    if args.quick:
        args.size, args.reps = 2048, 2
    paths = cohort(args.slides, args.size)
    bag = tilewise.dask.map_patches(paths, tissue_stats, size=(256, 256), patches_per_task=128)
    with dask.config.set(scheduler="synchronous"):
        t = time.perf_counter()
        local = sorted((r["path"], r["x"], r["y"], r["result"]) for r in bag.compute())
        local_s = time.perf_counter() - t
    n = len(local)
    table = Table(f"cohort: {args.slides} slides of {args.size}^2, {n} patches of 256^2, per-patch statistics")
    table.add("cohort run", "synchronous, this process", n / local_s, float("nan"), float("nan"), "patches/s")
    rates = {}
    os.environ["TILEWISE_NUM_THREADS"] = "1"  # inherited by the workers: one decode thread per worker
    for workers in (1, 2):
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
                Client(cluster) as client:
            client.compute(bag).result()  # warm-up: workers import tilewise and open the slides
            times, equal = [], True
            for _ in range(args.reps):
                t = time.perf_counter()
                records = client.compute(bag).result()
                times.append(time.perf_counter() - t)
                equal &= sorted((r["path"], r["x"], r["y"], r["result"]) for r in records) == local
        med = float(np.median(times))
        rates[workers] = n / med
        note = f"results equal to the local run: {equal}"
        if workers == 2:
            note += f"; scaling {rates[2] / rates[1] / 2:.2f} x N"
        table.add("cohort run", f"LocalCluster, {workers} worker process(es)", n / med, n / max(times), n / min(times),
                  "patches/s", note)
    print(table.markdown())
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "bench_cohort.md").write_text(table.markdown())


if __name__ == "__main__":
    main()
