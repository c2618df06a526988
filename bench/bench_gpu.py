"""GPU benchmark (workload 5, first part): random 256x256 level-0 patches to device memory.

tilewise read_region(device="cuda") from 1 and N Python threads, against the CPU path with the same threads
and against the raw nvImageCodec hardware-decoder ceiling on the same tiles (the nvImageCodec Python API
decoding the tiles, tables spliced, in batches). Prints one table."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

import tilewise
from common import time_runs

DATA = Path(os.environ.get("TILEWISE_GPU_DATA", Path(__file__).resolve().parents[1] / ".gpudata"))


def timed(fn, reps=3):
    """Median seconds of `reps` runs after one warm-up (bench/common.py)."""
    return time_runs(fn, reps)["median"]


def main() -> None:
    tilewise._gpu.configure()
    reason = tilewise._core.gpu_status(0)
    if reason:
        print(f"no GPU: {reason}")
        return
    path = DATA / "bench_ihc_6144.tif"
    s = tilewise.open(path)
    w0, h0 = s.dimensions
    rng = np.random.default_rng(0)
    n = 2000
    locs = [(int(rng.integers(0, w0 - 256)), int(rng.integers(0, h0 - 256))) for _ in range(n)]
    tilewise.set_cache_capacity(0)
    rows = []
    cores = os.cpu_count() or 1
    import cupy

    for threads in (1, 4, cores):
        for device in ("cuda", "cpu"):
            def run():
                with ThreadPoolExecutor(threads) as pool:
                    list(pool.map(lambda loc: s.read_region(loc, (256, 256), device=device), locs))
                cupy.cuda.Device(0).synchronize()
            t = timed(run)
            rows.append((f"random 256x256 to {device}, {threads} threads", n / t, "patches/s"))

    # Batch loader to device memory (batch 64) against the CPU loader, workers 8 and 16.
    arr = np.array(locs, dtype=np.int64)
    tilewise.set_worker_threads(1)
    for workers in (8, 16):
        for device in ("cuda", "cpu"):
            def run_loader():
                for _ in s.read_regions(arr, (256, 256), batch_size=64, num_workers=workers, prefetch=2, device=device):
                    pass
                cupy.cuda.Device(0).synchronize()
            t = timed(run_loader)
            rows.append((f"batch loader to {device}, batch 64, {workers} workers", n / t, "patches/s"))
    tilewise.set_worker_threads(0)

    # Ceiling: nvImageCodec's hardware decoder on the same level-0 tiles, batches of 64, from 1 and 2 threads.
    try:
        from nvidia import nvimgcodec
        import tifffile

        with tifffile.TiffFile(path) as tf:
            page = tf.pages[0]
            tables = page.jpegtables
            fh = tf.filehandle
            tiles = []
            for i in range(min(2000, len(page.dataoffsets))):
                fh.seek(page.dataoffsets[i])
                data = fh.read(page.databytecounts[i])
                tiles.append(tables[:-2] + data[2:])
        for backend_name, kind in (("hardware", nvimgcodec.BackendKind.HW_GPU_ONLY),
                                   ("CUDA", nvimgcodec.BackendKind.HYBRID_CPU_GPU)):
            decoder = nvimgcodec.Decoder(backends=[nvimgcodec.Backend(kind)])
            def ceiling():
                for k in range(0, len(tiles), 64):
                    out = decoder.decode(tiles[k:k + 64])
                cupy.cuda.Device(0).synchronize()
            t = timed(ceiling)
            rows.append((f"nvImageCodec {backend_name} decoder, batches of 64, 1 thread", len(tiles) / t, "tiles/s"))
    except Exception as e:  # the ceiling is informative; report why it is missing
        rows.append((f"nvImageCodec ceiling not measured: {e}", float('nan'), ""))

    print(f"\n### GPU: {path.name} ({w0}x{h0}), {n} random patches, caches off\n")
    print("| workload | rate | unit |\n|---|---:|---|")
    for name, rate, unit in rows:
        print(f"| {name} | {rate:.0f} | {unit} |")


if __name__ == "__main__":
    main()
