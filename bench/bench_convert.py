"""Writing a pyramidal TIFF: `tilewise convert` against libvips 8.14 (`vips tiffsave --tile --pyramid`, the
Debian package's command) on the same input, JPEG 256x256 tiles, a full pyramid (2 x 2 box averages down to
one tile), BigTIFF. Two workloads: Q90, where libvips 8.14 writes JPEG of RGB components (no colour
transform, no chroma subsampling: about 2.3x the bytes; its tiffsave has no option to change that) and
tilewise YCbCr 4:2:0 (its default) or 4:4:4 (`--no-subsample`, "tilewise-444"); and Q89, where both write
YCbCr 4:2:0, like for like. The input is the benchmark slide (real tissue, JPEG q80, written by libvips);
each run is a process of its own, the tools alternating run by run, timed from start to exit, its peak RSS from wait4. Both use every core
(libvips' thread pool, tilewise's worker pool). Each output is opened by tilewise and its levels counted,
so a tool that writes less is not faster by it.

    bench_convert.py [--size N] [--reps R] [--quick]"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from common import Table, bench_parser, benchmark_slide, publish

TILEWISE = shutil.which("tilewise", path=str(Path(sys.executable).parent))
VIPS = shutil.which("vips")


def timed(command: list[str]) -> tuple[float, float]:
    """(milliseconds, peak RSS MiB) of one process running `command`; a failure raises with its stderr."""
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        p = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(p.pid, 0)
        ms = (time.perf_counter() - start) * 1000
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode != 0:
            err.seek(0)
            raise RuntimeError(f"{command[0]} exited {p.returncode}: {err.read().decode(errors='replace').strip()[-300:]}")
    return ms, usage.ru_maxrss / 1024


def command(tool: str, quality: int, src: Path, out: Path) -> list[str]:
    if tool.startswith("tilewise"):
        extra = ["--no-subsample"] if tool == "tilewise-444" else []
        return [TILEWISE, "convert", str(src), str(out), "--codec", "jpeg", "--quality", str(quality), "--tile-size",
                "256", *extra]
    return [VIPS, "tiffsave", str(src), str(out), "--tile", "--pyramid", "--tile-width=256", "--tile-height=256",
            "--compression=jpeg", f"--Q={quality}", "--bigtiff"]


WORKLOADS = (
    ("JPEG Q90 (libvips: RGB components; tilewise: YCbCr 4:2:0, -444: 4:4:4)", 90, ("tilewise", "tilewise-444", "libvips")),
    ("JPEG Q89 (both YCbCr 4:2:0)", 89, ("tilewise", "libvips")),
)


def main() -> None:
    ap = bench_parser(reps=5, size=20480)
    args = ap.parse_args()
    if args.quick:
        args.size, args.reps = 4096, 2
    # Made in a child: a child process's peak RSS counts from the parent's at fork, so the parent stays small
    subprocess.run([sys.executable, "-c", f"from common import benchmark_slide; benchmark_slide({args.size})"],
                   cwd=Path(__file__).resolve().parent, check=True)
    src = benchmark_slide(args.size)
    import tilewise

    with tilewise.open(src) as s:
        width, height = s.dimensions
    table = Table(f"CPU, {os.cpu_count()} cores: {width}x{height} JPEG slide to a pyramidal TIFF (256x256 tiles, "
                  "full pyramid), each run its own process, the tools alternating", base_tool="tilewise")
    runs = [(workload, quality, tool) for workload, quality, tools in WORKLOADS for tool in tools]
    times = {run: [] for run in runs}
    peaks = {run: [] for run in runs}
    notes, failed = {}, {}
    with tempfile.TemporaryDirectory(dir=src.parent) as tmp:
        out = Path(tmp) / "out.tif"
        # Repetitions alternate the tools (this machine's speed drifts by a quarter between minutes); the
        # first is a warm-up (the page cache)
        for rep in range(args.reps + 1):
            for run in runs:
                workload, quality, tool = run
                exe = VIPS if tool == "libvips" else TILEWISE
                if exe is None or run in failed:
                    continue
                if out.exists():
                    out.unlink()
                try:
                    ms, peak = timed(command(tool, quality, src, out))
                    with tilewise.open(out) as written:
                        notes[run] = f"{written.level_count} levels, {out.stat().st_size / 2**20:.0f} MiB"
                except RuntimeError as e:
                    failed[run] = str(e)[-200:]
                    continue
                if rep:
                    times[run].append(ms)
                    peaks[run].append(peak)
    for run in runs:
        workload, _, tool = run
        if (VIPS if tool == "libvips" else TILEWISE) is None:
            table.add(workload, f"{tool} not run (not installed)", float("nan"), float("nan"), float("nan"), "ms")
        elif run in failed:
            table.add(workload, f"{tool} FAILED", float("nan"), float("nan"), float("nan"), "ms", failed[run])
        else:
            t = sorted(times[run])
            table.add(workload, tool, float(np.median(t)), t[0], t[-1], "ms",
                      f"peak RSS {max(peaks[run]):.0f} MiB; {notes[run]}")
    publish(table, "convert.md")


if __name__ == "__main__":
    main()
