"""One workload in this process, for before/after comparisons of two builds (scripts/gpu/ab.sh): whichever
tilewise is on PYTHONPATH runs it and prints one JSON line of rates (median, min, max).

    ab_child.py loader WORKERS DEVICE    batch loader, 2,000 random 256x256 patches, batch 64 (patches/s;
                                         prefetch AB_PREFETCH, default 2)
    ab_child.py random THREADS DEVICE    read_region from THREADS Python threads (patches/s)
    ab_child.py region DEVICE            one 4096x4096 region at (512, 512) (MPix/s)
    ab_child.py tiny DEVICE              20,000 8x8 reads from one thread: the per-call cost (calls/s)

AB_REPS (default 5) timed runs after AB_WARMUP (default 1) untimed ones; AB_READS_LOG: a file each run's
monotonic start and end (ns) are appended to (bench/diag/lane_trace.py). Uses only API that every build since the GPU path has (no tilewise._bench)."""

from __future__ import annotations

import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: common, the workloads
from common import host_cores, host_cpu_jiffies, host_event_rates, host_events, logged_runs, process_cpu_seconds, thread_cores, thread_cpu_seconds, time_runs  # noqa: E402

import tilewise  # noqa: E402

SLIDE = Path(os.environ.get("TILEWISE_GPU_DATA", Path(__file__).resolve().parents[2] / ".gpu" / "data")) / \
    os.environ.get("TILEWISE_BENCH_SLIDE", "bench_ihc_6144.tif")  # as bench_gpu.py
N, SIZE = 2000, 256


def main() -> None:
    what, device = sys.argv[1], sys.argv[-1]
    tilewise._gpu.configure()
    tilewise.set_cache_capacity(0)
    s = tilewise.open(SLIDE)
    w0, h0 = s.dimensions
    rng = np.random.default_rng(0)
    locs = np.stack([rng.integers(0, w0 - SIZE, N), rng.integers(0, h0 - SIZE, N)], axis=1).astype(np.int64)

    def sync():
        if device != "cpu":
            import cupy

            cupy.cuda.Device(0).synchronize()

    if what == "loader":
        workers = int(sys.argv[2])

        def run():
            for _ in s.read_regions(locs, (SIZE, SIZE), batch_size=64, num_workers=workers, device=device,
                                    prefetch=int(os.environ.get("AB_PREFETCH", os.environ.get("TILEWISE_BENCH_PREFETCH", "2")))):
                pass
            sync()
        count = N
    elif what == "random":
        threads = int(sys.argv[2])

        def run():
            with ThreadPoolExecutor(threads) as pool:
                list(pool.map(lambda l: s.read_region((int(l[0]), int(l[1])), (SIZE, SIZE), device=device), locs))
            sync()
        count = N
    elif what == "tiny":
        tilewise.set_cache_capacity(256 << 20)  # the same few tiles, cached: what is left is the call

        def run():
            for i in range(20000):
                s.read_region((i % 64, i % 48), (8, 8), device=device)
            sync()
        count = 20000
    else:
        def run():
            s.read_region((512, 512), (4096, 4096), device=device)
            sync()
        count = 4096 * 4096 / 1e6
    run = logged_runs(run)  # AB_READS_LOG: each run's start and end, for bench/diag/lane_trace.py
    reps, warmup = int(os.environ.get("AB_REPS", "5")), int(os.environ.get("AB_WARMUP", "1"))
    for _ in range(warmup):  # outside the counters below: a device read's first pass starts the GPU (seconds)
        run()
    g0 = tilewise._core.gpu_stats(0) if device != "cpu" else None
    wall, cpu, threads0, events0 = time.perf_counter(), process_cpu_seconds(), thread_cpu_seconds(), host_events()
    jiffies0 = host_cpu_jiffies()
    r = time_runs(run, reps, warmup=0)
    took = time.perf_counter() - wall
    cores = (process_cpu_seconds() - cpu) / took  # host cores busy, on average over the timed runs
    out = {"median": count / r["median"], "min": count / r["max"], "max": count / r["min"], "cores": round(cores, 2),
           "threads": thread_cores(threads0, thread_cpu_seconds(), took),
           # page faults, context switches, TLB shootdowns per 1,000 units of `count`
           "events_per_1000": host_event_rates(events0, host_events(), count * reps / 1000),
           # the whole machine's cores over the same time: busy, idle, and stolen by the hypervisor
           "host_cores": host_cores(jiffies0, host_cpu_jiffies(), took)}
    if device != "cpu":  # how the tiles were shared out, over all runs (warm-up included)
        g = tilewise._core.gpu_stats(0)
        out.update(gpu_tiles=g["gpu_tiles"], cpu_tiles=g["cpu_tiles"],
                   tiles_per_batch=round(g["gpu_tiles"] / max(1, g["batches"]), 1))
        # host CPU microseconds per tile over the timed runs, by stage (gpu_stats' host_*_ns); "other" is the
        # rest of the process's CPU time: nvImageCodec's and CUDA's own threads, the callers' planning
        tiles = (g["gpu_tiles"] + g["cpu_tiles"]) - (g0["gpu_tiles"] + g0["cpu_tiles"])
        stages = {k[5:-3]: (g[k] - g0[k]) / 1e3 / max(1, tiles) for k in g if k.startswith("host_") and k.endswith("_ns")}
        stages["other"] = (process_cpu_seconds() - cpu) * 1e6 / max(1, tiles) - sum(stages.values())
        out["host_us_per_tile"] = {k: round(v, 2) for k, v in stages.items()}
        out["gpu_only_tiles_share"] = round((g["gpu_tiles"] - g0["gpu_tiles"]) / max(1, tiles), 4)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
