"""Diagnosis on the lent GPU machine (not a benchmark table): the host's own CPU scaling on JPEG decoding
(Pillow in N processes, so that no GIL is involved), and the raw nvImageCodec ceiling over a grid of thread
counts and batch sizes. Run after scripts/gpu/test.sh's set-up (PYTHONPATH with the built tilewise), e.g.
through scripts/gpu/probe.sh bench/diag/gpu_diag.py.
    gpu_diag.py                      the host's scaling, then the ceiling grid (1.5 s per cell, one run each)
    gpu_diag.py --ceiling [SLIDE...] the sustained ceiling alone: each cell's threads decode for 2 s, median
                                     (min-max) of 3 runs per cell, per slide of $TILEWISE_GPU_DATA"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: common, the workloads
from common import jpeg_tiles  # noqa: E402

import tilewise  # noqa: E402
import tilewise._bench  # noqa: E402,F401

SLIDE = Path(os.environ.get("TILEWISE_GPU_DATA", Path(__file__).resolve().parents[2] / ".gpu" / "data")) / "bench_ihc_6144.tif"


def _decode_for(streams, seconds: float = 2.0) -> float:
    import io

    from PIL import Image

    n, t = 0, time.perf_counter()
    while time.perf_counter() - t < seconds:
        for b in streams:
            Image.open(io.BytesIO(b)).load()
        n += len(streams)
    return n / (time.perf_counter() - t)


def cpu_scaling(streams) -> None:
    """The host's own scaling on JPEG decoding, outside tilewise: Pillow (libjpeg-turbo) over the same 64
    tiles in N processes at once, 2 s each."""
    from concurrent.futures import ProcessPoolExecutor

    one = None
    for procs in (1, 2, 4, 8, 16):
        with ProcessPoolExecutor(procs) as pool:
            rate = sum(pool.map(_decode_for, [streams[:64]] * procs))
        one = one or rate
        print(f"cpu reference (Pillow decode, {procs} processes): {rate:.0f} tiles/s = {rate / one:.2f} x 1", flush=True)


def sustained_ceiling(slides) -> None:
    """The sustained raw decode ceiling: every decoder thread decodes for 2 s per run (level 0's
    tiles, tables spliced, pinned input), 3 runs per cell, median (min-max) in tiles/s."""
    import statistics

    for name in slides:
        path = SLIDE.parent / name
        if not path.exists():
            print(f"ceiling {name}: not on this machine", flush=True)
            continue
        streams = jpeg_tiles(path, 0)
        best = 0.0
        for threads in (4, 8, 16):
            for batch in (32, 64):
                runs, cores = [], []
                for _ in range(3):
                    wall, cpu = time.perf_counter(), time.process_time()  # the process's CPU time, all threads
                    runs.append(tilewise._bench.decode_rate(streams, 256, 256, threads=threads, batch=batch,
                                                            seconds=2.0)[0])
                    cores.append((time.process_time() - cpu) / (time.perf_counter() - wall))
                med = statistics.median(runs)
                best = max(best, med)
                print(f"ceiling {name} ({len(streams)} tiles) threads {threads} batch {batch}: {med:.0f} "
                      f"({min(runs):.0f}-{max(runs):.0f}) tiles/s at {statistics.median(cores):.1f} host cores",
                      flush=True)
        print(f"ceiling {name}: best cell median {best:.0f} tiles/s", flush=True)


def main() -> None:
    tilewise._gpu.configure()
    tilewise._core.gpu_status(0)  # loads nvImageCodec through _core, so that _bench's dlopen finds it loaded
    tilewise.set_cache_capacity(0)
    if sys.argv[1:2] == ["--ceiling"]:
        sustained_ceiling(sys.argv[2:] or [SLIDE.name])
        return
    streams = jpeg_tiles(SLIDE, 0)
    cpu_scaling(streams)
    for threads in (4, 8, 16):
        for batch in (8, 16, 32, 64):
            rate, _ = tilewise._bench.decode_rate(streams, 256, 256, threads=threads, batch=batch, seconds=1.5)
            print(f"ceiling threads {threads} batch {batch}: {rate:.0f} tiles/s", flush=True)


if __name__ == "__main__":
    main()
