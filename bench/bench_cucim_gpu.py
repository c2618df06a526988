"""cuCIM's GPU path on ONE workload of bench_gpu.py, in its own process (bench_gpu.py starts one per workload,
in a site that holds cucim-cu13 and the nvImageCodec 0.9 it needs), so that a crash in one workload cannot
change what another measures. ENABLE_CUSLIDE2=1 selects the nvImageCodec-based cuslide2 plugin (cuCIM's
intended GPU path); the row is labelled with the value this process ran with.
Usage: bench_cucim_gpu.py SLIDE WORKERS WORKLOAD -> prints a JSON list with that workload's row.
WORKLOAD: region | patches1 | patchesN | loader:K | cpuloader:K | tiling."""

from __future__ import annotations

import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import time_runs  # noqa: E402

N = 2000
SIZE = 256


def main() -> None:
    import cupy
    from cucim import CuImage

    path, cores = sys.argv[1], int(sys.argv[2])
    CuImage.cache("nocache")
    img = CuImage(path)
    w0, h0 = img.resolutions["level_dimensions"][0]
    rng = np.random.default_rng(0)  # the same locations as bench_gpu.py
    locs = np.stack([rng.integers(0, w0 - SIZE, N), rng.integers(0, h0 - SIZE, N)], axis=1).astype(np.int64)
    rows = []

    def sync():
        cupy.cuda.Device(0).synchronize()

    plugin = "cuslide2, ENABLE_CUSLIDE2=1" if os.environ.get("ENABLE_CUSLIDE2") == "1" else "classic cuslide"

    def add(workload, r, count, unit, note=""):
        rows.append(dict(workload=workload, tool=f"cuCIM GPU ({plugin})", value=count / r["median"],
                         lo=count / r["max"], hi=count / r["min"], unit=unit, note=note))

    def measure(workload, fn, reps, count, unit, warmup=1):
        """One row; a failure becomes a row saying so (the other workloads still run)."""
        try:
            add(workload, time_runs(fn, reps, warmup), count, unit)
        except Exception as e:  # noqa: BLE001 - reported in the table
            rows.append(dict(workload=workload, tool=f"cuCIM GPU ({plugin}) failed: {type(e).__name__}: {e}",
                             value=float("nan"), lo=float("nan"), hi=float("nan"), unit=unit))

    workload = sys.argv[3]

    def patch(loc):
        return img.read_region((int(loc[0]), int(loc[1])), (SIZE, SIZE), 0, device="cuda")

    def threaded():
        with ThreadPoolExecutor(cores) as pool:
            list(pool.map(patch, locs))
        sync()

    def loader(workers):
        def run():
            # prefetch_factor as bench_gpu.py's tilewise loader (TILEWISE_BENCH_PREFETCH, default 2 for both).
            for batch in img.read_region(locs.tolist(), (SIZE, SIZE), 0, batch_size=64, num_workers=workers,
                                         prefetch_factor=int(os.environ.get("TILEWISE_BENCH_PREFETCH", "2")),
                                         device="cuda"):
                cupy.asarray(batch)
            sync()
        return run

    def cpu_loader(workers):
        def run():
            for batch in img.read_region(locs.tolist(), (SIZE, SIZE), 0, batch_size=64, num_workers=workers,
                                         prefetch_factor=int(os.environ.get("TILEWISE_BENCH_PREFETCH", "2"))):
                np.asarray(batch)
        return run

    grid = [(x, y) for y in range(0, h0 - SIZE + 1, SIZE) for x in range(0, w0 - SIZE + 1, SIZE)]

    def tiling():
        for batch in img.read_region(grid, (SIZE, SIZE), 0, batch_size=64, num_workers=cores, device="cuda"):
            cupy.asarray(batch)
        sync()

    # cuCIM is much slower than tilewise here: 3 repetitions outside the loader rows keep the run short.
    if workload == "region":
        # AB_REPS / AB_WARMUP: as ab_child.py's region, for side-by-side rows (scripts/gpu/measure.sh regionpair).
        measure("1: 4096^2 region",
                lambda: (cupy.asarray(img.read_region((512, 512), (4096, 4096), 0, device="cuda")), sync()),
                int(os.environ.get("AB_REPS", "3")), 4096 * 4096 / 1e6, "MPix/s",
                warmup=int(os.environ.get("AB_WARMUP", "1")))
    elif workload == "patches1":
        measure("2: random patches, 1 threads", lambda: ([patch(loc) for loc in locs], sync()), 3, N, "patches/s")
    elif workload == "patchesN":
        measure(f"2: random patches, {cores} threads", threaded, 3, N, "patches/s")
    elif workload.startswith("loader:"):
        workers = int(workload.split(":")[1])
        measure(f"3: loader, {workers} workers", loader(workers), 5, N, "patches/s")
    elif workload.startswith("cpuloader:"):  # cuCIM's loader into host memory (the CPU baseline)
        workers = int(workload.split(":")[1])
        rows_before = len(rows)
        measure(f"3: loader on the CPU, {workers} workers", cpu_loader(workers), 5, N, "patches/s")
        for row in rows[rows_before:]:
            row["tool"] = row["tool"].replace("cuCIM GPU", "cuCIM CPU")
    elif workload == "tiling":
        measure("4: tiling level 0", tiling, 3, len(grid) * SIZE * SIZE / 1e6, "MPix/s")
    else:
        raise SystemExit(f"unknown workload {workload!r}")
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
