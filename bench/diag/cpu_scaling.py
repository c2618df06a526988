"""How the CPU batch loader scales with workers: random unaligned 256 x 256 level-0 patches
of one slide through `read_regions` on the CPU, caches off, for 1, 2, 4, ... workers up to the cores;
patches/s (median and min-max of the repetitions) and the scaling against N x the 1-worker rate; each worker
reads its regions on its own thread (set_worker_threads(1)), as bench_loader.py measures.

  cpu_scaling.py [--slide PATH] [--patches N] [--reps R] [--workers 1,2,4,8,16]
  cpu_scaling.py --hold W --seconds S     (W workers reading for S seconds: a window for a profiler)
  cpu_scaling.py --processes [--seconds S] (also N processes of one worker each, reading at once for S
                                            seconds, medians of 3: what the host gives N independent
                                            readers, against which the N workers of one process are set)

The slide defaults to $TILEWISE_GPU_DATA/bench_ihc_6144.tif (the GPU machine's), else the 2-core
benchmark slide."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import tilewise

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: common
from common import bench_parser, benchmark_slide, time_runs  # noqa: E402


def default_slide() -> Path:
    gpu = Path(os.environ.get("TILEWISE_GPU_DATA", "")) / "bench_ihc_6144.tif"
    return gpu if gpu.is_file() else benchmark_slide(8192)


def main() -> None:
    ap = bench_parser(reps=5, patches=4000)
    ap.add_argument("--slide", type=Path)
    ap.add_argument("--workers", default="")
    ap.add_argument("--hold", type=int, default=0)
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--processes", action="store_true")
    args = ap.parse_args()
    tilewise.set_cache_capacity(0)
    # Parallelism across patches only (one thread per worker, as bench_loader.py and the other tools read):
    # N x the 1-worker rate is then N cores' worth.
    tilewise.set_worker_threads(1)
    slide = tilewise.open(args.slide or default_slide())
    w0, h0 = slide.dimensions
    rng = np.random.default_rng(0)
    locs = np.stack([rng.integers(0, w0 - 256, args.patches), rng.integers(0, h0 - 256, args.patches)], axis=1)

    def run(workers: int):
        def once():
            for _ in slide.read_regions(locs, (256, 256), batch_size=64, num_workers=workers, prefetch=2):
                pass
        return once

    if args.hold:
        once, end, n = run(args.hold), time.perf_counter() + args.seconds, 0
        start = time.perf_counter()
        while time.perf_counter() < end:
            once()
            n += len(locs)
        print(json.dumps({"workers": args.hold, "patches_per_s": n / (time.perf_counter() - start)}))
        return
    cores = os.cpu_count() or 1
    counts = [int(w) for w in args.workers.split(",")] if args.workers else \
        [w for w in (1, 2, 4, 8, 16, 32) if w <= cores]
    run(counts[-1])()  # warm-up: page cache, pools
    base = None
    print(f"slide {slide.dimensions}, {args.patches} patches, caches off, median of {args.reps}")
    extra = " N processes x 1 worker | min-max | workers / processes |" if args.processes else ""
    print("| workers | patches/s | min-max | x N x 1-worker |" + extra)
    print("|---:|---:|---:|---:|" + ("---:|---:|---:|" if args.processes else ""))
    for w in counts:
        r = time_runs(run(w), args.reps)
        rate = {k: args.patches / v for k, v in r.items()}
        base = base or rate["median"]
        row = f"| {w} | {rate['median']:.0f} | {rate['max']:.0f}-{rate['min']:.0f} | {rate['median'] / (w * base):.2f} |"
        if args.processes:
            sums = sorted(processes_rate(args, w) for _ in range(3))
            row += f" {sums[1]:.0f} | {sums[0]:.0f}-{sums[2]:.0f} | {rate['median'] / sums[1]:.2f} |"
        print(row, flush=True)


def processes_rate(args, n: int) -> float:
    """Patches/s of n processes of one worker each, reading at the same time for args.seconds."""
    cmd = [sys.executable, __file__, "--hold", "1", "--seconds", str(args.seconds), "--patches", str(args.patches)]
    if args.slide:
        cmd += ["--slide", str(args.slide)]
    children = [subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) for _ in range(n)]
    rates = []
    for c in children:
        out, _ = c.communicate()
        if c.returncode != 0:
            raise RuntimeError(f"a reading process failed ({c.returncode})")
        rates.append(json.loads(out.strip().splitlines()[-1])["patches_per_s"])
    return sum(rates)


if __name__ == "__main__":
    main()
