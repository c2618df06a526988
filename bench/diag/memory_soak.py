"""Memory over many loader batches (device and host memory must stay flat over 10,000 batches): random
unaligned 256 x 256 level-0 patches through `read_regions`, batch 64, epochs of shuffled locations, the
process's resident memory (VmRSS) sampled every N batches, and with --device cuda the device's memory in use
(cudaMemGetInfo, through CuPy).

  memory_soak.py [--slide PATH] [--batches 10000] [--every 500] [--workers N] [--device cpu|cuda]
                 [--cache-bytes B]

Prints one markdown table and the growth between the first sample after warm-up and the last."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

import tilewise

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: common
from common import benchmark_slide, rss_mib  # noqa: E402


def device_mib() -> float:
    """The device's memory in use (cudaMemGetInfo: this process's pools, caches and batches, and the CUDA
    context; nothing else runs on the lent GPU)."""
    import cupy

    free, total = cupy.cuda.runtime.memGetInfo()
    return (total - free) / 2**20


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--slide")
    ap.add_argument("--batches", type=int, default=10000)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--every", type=int, default=500)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--cache-bytes", type=int, default=None, help="tile cache capacity (default: tilewise's)")
    args = ap.parse_args()
    if args.device != "cpu":
        tilewise._gpu.configure()
    if args.cache_bytes is not None:
        tilewise.set_cache_capacity(args.cache_bytes)
    slide = tilewise.open(args.slide or benchmark_slide(20480))
    w0, h0 = slide.dimensions
    per_epoch = 1000 * args.batch_size
    rng = np.random.default_rng(0)
    locs = np.stack([rng.integers(0, w0 - 256, per_epoch), rng.integers(0, h0 - 256, per_epoch)], axis=1)
    print(f"{slide.format} {w0}x{h0}, {args.batches} batches of {args.batch_size}, {args.workers} workers, "
          f"device {args.device}, cache {tilewise.cache_capacity() >> 20} MiB")
    print("| batches | host RSS (MiB) |" + (" device (MiB) |" if args.device != "cpu" else "") + " patches/s |")
    print("|---:|---:|" + ("---:|" if args.device != "cpu" else "") + "---:|")
    done, epoch, samples = 0, 0, []
    window_start, window_done = time.perf_counter(), 0
    while done < args.batches:
        batches = slide.read_regions(locs, (256, 256), batch_size=args.batch_size, num_workers=args.workers,
                                     prefetch=2, shuffle=True, seed=epoch, device=args.device)
        for _ in batches:
            done += 1
            window_done += 1
            if done % args.every == 0 or done == args.batches:
                rate = window_done * args.batch_size / (time.perf_counter() - window_start)
                sample = (done, rss_mib(), device_mib() if args.device != "cpu" else None)
                samples.append(sample)
                dev = f" {sample[2]:.0f} |" if sample[2] is not None else ""
                print(f"| {done} | {sample[1]:.0f} |{dev} {rate:.0f} |", flush=True)
                window_start, window_done = time.perf_counter(), 0
            if done >= args.batches:
                break
        epoch += 1
    first, last = samples[min(1, len(samples) - 1)], samples[-1]
    growth = f"host RSS {first[1]:.0f} -> {last[1]:.0f} MiB from batch {first[0]} to {last[0]}"
    if args.device != "cpu":
        growth += f", device {first[2]:.0f} -> {last[2]:.0f} MiB"
    print(growth)


if __name__ == "__main__":
    main()
