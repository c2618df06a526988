"""Shared benchmark helpers: the realistic benchmark slide, timing, tile extraction and table printing."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "data"))
import slidegen  # noqa: E402

DATA = REPO / "bench" / "data"
OUT = REPO / "bench" / "out"
NATIVE = REPO / "build" / "bench"


def benchmark_slide(size: int = 20480, tile: int = 256, quality: int = 80) -> Path:
    """A size x size pyramid of real tissue (ihc.png, tiled, mirrored, colour-jittered), JPEG q80 4:2:0 with
    shared tables, written by libvips. Cached under bench/data/."""
    DATA.mkdir(parents=True, exist_ok=True)
    path = DATA / f"ihc_{size}_t{tile}_q{quality}.tif"
    if not path.exists():
        print(f"generating {path.name} ...", flush=True)
        image = slidegen.ihc_tissue(size, size, seed=1)
        tmp = path.with_suffix(".partial.tif")
        slidegen.write_vips_pyramid(tmp, image, tile=tile, quality=quality)
        del image
        tmp.rename(path)
    return path


def process_cpu_seconds() -> float:
    """CPU time of this process so far, every thread, user and system."""
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def thread_cpu_seconds() -> Dict[str, float]:
    """CPU time (user + system, seconds) of this process's live threads, summed per thread name: tilewise
    names its own (src/util/thread_name.h: tw-decode, tw-loader, tw-helper, tw-lane, tw-nvimgcodec); the
    rest keep theirs (python3 for the interpreter's, and what CUDA or a library names). Linux only: {}
    elsewhere. Threads that ended are not counted."""
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    totals: Dict[str, float] = {}
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return totals
    for tid in tasks:
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                stat = f.read()
        except OSError:
            continue  # the thread ended meanwhile
        # "tid (comm) state ...": comm may hold spaces or parentheses, so split at the last ')'.
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        totals[name] = totals.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    return totals


def thread_cores(before: Dict[str, float], after: Dict[str, float], seconds: float) -> Dict[str, float]:
    """Cores busy per thread name between two thread_cpu_seconds() samples `seconds` apart, busiest first
    (names under 0.05 cores left out)."""
    cores = {k: (v - before.get(k, 0.0)) / seconds for k, v in after.items()}
    return {k: round(v, 2) for k, v in sorted(cores.items(), key=lambda kv: -kv[1]) if v >= 0.05}


def host_events() -> Dict[str, int]:
    """Counters of what a process's threads cost the host besides their own work: minor page faults, voluntary
    and involuntary context switches (getrusage), and the whole machine's TLB shootdowns and function-call
    interrupts (/proc/interrupts' TLB and CAL rows; 0 where absent). Take two and divide the difference by
    the work done (host_event_rates)."""
    import resource

    u = resource.getrusage(resource.RUSAGE_SELF)
    out = {"minflt": u.ru_minflt, "nvcsw": u.ru_nvcsw, "nivcsw": u.ru_nivcsw, "tlb": 0, "cal": 0}
    try:
        for line in Path("/proc/interrupts").read_text().splitlines():
            name, _, rest = line.strip().partition(":")
            if name in ("TLB", "CAL"):
                out[name.lower()] = sum(int(f) for f in rest.split() if f.isdigit())
    except OSError:
        pass
    return out


def host_cpu_jiffies() -> Dict[str, int]:
    """The whole machine's CPU time by kind since boot, in clock ticks (/proc/stat's "cpu" line): busy (user,
    nice, system, irq, softirq), idle (idle, iowait) and steal (time the hypervisor ran something else while
    a virtual CPU wanted to run); empty where unreadable."""
    try:
        f = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    except (OSError, ValueError, IndexError):
        return {}
    f += [0] * (8 - len(f))
    return {"busy": f[0] + f[1] + f[2] + f[5] + f[6], "idle": f[3] + f[4], "steal": f[7]}


def host_cores(before: Dict[str, int], after: Dict[str, int], seconds: float) -> Dict[str, float]:
    """host_cpu_jiffies' differences as cores (busy, idle, steal) over `seconds`."""
    hz = os.sysconf("SC_CLK_TCK")
    return {k: round((after[k] - before[k]) / hz / seconds, 2) for k in before if k in after}


def host_event_rates(before: Dict[str, int], after: Dict[str, int], per: float) -> Dict[str, float]:
    """host_events' differences per `per` units of work (e.g. per 1,000 patches)."""
    return {k: round((after[k] - before[k]) / per, 2) for k in before}


def logged_runs(fn: Callable[[], object]) -> Callable[[], object]:
    """`fn`, appending each call's monotonic start and end (ns) to the file AB_READS_LOG names when it is set
    (bench/diag/lane_trace.py and bench/diag/lane_gaps.py join them with the lanes' call trace, TILEWISE_GPU_TRACE)."""
    log = os.environ.get("AB_READS_LOG")
    if not log:
        return fn

    def run():
        start = time.monotonic_ns()
        fn()
        with open(log, "a") as f:
            f.write(f"{start},{time.monotonic_ns()}\n")
    return run


def time_runs(fn: Callable[[], object], reps: int = 5, warmup: int = 1) -> Dict[str, float]:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return {"median": statistics.median(times), "min": min(times), "max": max(times)}


def jpeg_tiles(path: Path, level: int, indices: Optional[List[int]] = None) -> List[bytes]:
    """Complete JPEG streams of a level's tiles (JPEGTables spliced in), as a decoder would get them."""
    import tifffile

    with tifffile.TiffFile(path) as tf:
        page = tf.pages[level]
        tables = page.jpegtables or b""
        out = []
        fh = tf.filehandle
        for i in indices if indices is not None else range(len(page.dataoffsets)):
            fh.seek(page.dataoffsets[i])
            data = fh.read(page.databytecounts[i])
            out.append(tables[:-2] + data[2:] if tables else data)
        return out


def ensure_native() -> Path:
    """Builds bench/native/jpeg_ceiling.cc (needs libturbojpeg0-dev) when stale."""
    NATIVE.mkdir(parents=True, exist_ok=True)
    exe = NATIVE / "jpeg_ceiling"
    src = REPO / "bench" / "native" / "jpeg_ceiling.cc"
    if not exe.exists() or exe.stat().st_mtime < src.stat().st_mtime:
        subprocess.run(["g++", "-O2", "-std=c++17", str(src), "-o", str(exe), "-lturbojpeg", "-pthread"], check=True)
    return exe


def jpeg_ceiling(tiles: List[bytes], threads: int = 1, reps: int = 5) -> dict:
    exe = ensure_native()
    blob = NATIVE / f"tiles_{os.getpid()}.bin"
    with open(blob, "wb") as f:
        for t in tiles:
            f.write(len(t).to_bytes(4, "little"))
            f.write(t)
    try:
        out = subprocess.run([str(exe), str(blob), "--threads", str(threads), "--reps", str(reps)], check=True,
                             capture_output=True, text=True).stdout
    finally:
        blob.unlink()
    return json.loads(out)


def read_all(read: Callable[[object], object], locations, threads: int) -> None:
    """Calls read(location) for every location: in this thread, or from a pool of `threads` threads."""
    if threads == 1:
        for loc in locations:
            read(loc)
    else:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(read, locations))


def proc_kib(path: str, field: str) -> float:
    """A "Field: N kB" line's N from a /proc file (/proc/self/status, /proc/meminfo); nan when absent."""
    with open(path) as f:
        for line in f:
            if line.startswith(field + ":"):
                return float(line.split()[1])
    return float("nan")


def peak_rss_mib() -> float:
    """This process's peak resident set (VmHWM: unlike ru_maxrss, not inherited across exec)."""
    return proc_kib("/proc/self/status", "VmHWM") / 1024


def rss_mib() -> float:
    """This process's resident set now (VmRSS)."""
    return proc_kib("/proc/self/status", "VmRSS") / 1024


def random_patch_rates(tool: str, path: str, threads: int, patches: int, reps: int) -> dict:
    """One tool's random 256x256 level-0 patches/s in this process (run it in a child of its own), caches
    off: the rate of each repetition after a warm-up, and the peak RSS. Tools: "openslide", "tilewise"; for
    restart-interval slides (NDPI, VMS) also "tilewise-cold", whose MCU index (tilewise.mcu_index_stats) is
    dropped before every repetition, so that each one pays for finding its checkpoints as a first pass over
    a slide does, and "tilewise-noindex", with the index off (every window decoded from its unit's start)."""
    rng = np.random.default_rng(0)
    before_rep = lambda: None  # noqa: E731
    if tool.startswith("tilewise"):
        import tilewise

        slide = tilewise.open(path)
        w0, h0 = slide.dimensions
        tilewise.set_cache_capacity(0)
        tilewise.set_worker_threads(1)
        if tool != "tilewise":
            capacity = tilewise.mcu_index_stats()["capacity"]
            tilewise.set_mcu_index_capacity(0)
            if tool == "tilewise-cold":
                def before_rep():
                    tilewise.set_mcu_index_capacity(0)
                    tilewise.set_mcu_index_capacity(capacity)

        def read(loc):
            slide.read_region(loc, (256, 256))
    else:
        import openslide

        osr = openslide.OpenSlide(path)
        osr.set_cache(openslide.OpenSlideCache(0))
        w0, h0 = osr.dimensions

        def read(loc):
            np.asarray(osr.read_region(loc, 0, (256, 256)))
    locs = [(int(rng.integers(0, w0 - 256)), int(rng.integers(0, h0 - 256))) for _ in range(patches)]
    rates = []
    for rep in range(reps + 1):
        before_rep()
        t = time.perf_counter()
        read_all(read, locs, threads)
        if rep:  # the first is a warm-up
            rates.append(patches / (time.perf_counter() - t))
    return {"rates": rates, "peak_mib": peak_rss_mib()}


def open_rates(tool: str, path: str, opens: int) -> dict:
    """Opens per second of one tool (tilewise or OpenSlide) in this process, after a warm-up, and the level
    count it saw."""
    rates = []
    levels = 0
    for i in range(opens + 1):
        t = time.perf_counter()
        if tool == "tilewise":
            import tilewise

            s = tilewise.open(path)
            levels = len(s.levels)
        else:
            import openslide

            s = openslide.OpenSlide(path)
            levels = s.level_count
            s.close()
        if i:
            rates.append(1.0 / (time.perf_counter() - t))
        del s
    return {"rates": rates, "peak_mib": peak_rss_mib(), "levels": levels}


def bench_parser(*, reps: int = 5, size: int | None = None, patches: int | None = None):
    """The arguments every benchmark takes: --reps (timed repetitions: each row is their median with min-max)
    and --quick (a smoke run; each benchmark says how it shrinks), plus --size (the generated slide's side in
    pixels) and --patches (random patches per repetition) where the workload has them. A benchmark adds its own."""
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=reps, help="timed repetitions (median, min-max)")
    ap.add_argument("--quick", action="store_true", help="a smoke run: smaller and fewer")
    if size is not None:
        ap.add_argument("--size", type=int, default=size, help="generated slide side in pixels")
    if patches is not None:
        ap.add_argument("--patches", type=int, default=patches, help="random patches per repetition")
    return ap


def open_and_patch_args(patches: int = 400):
    """The arguments of a benchmark of opens and random patches, each measured in a child of its own
    (`--child KIND TOOL PATH THREADS N`, which prints its JSON line and ends the process); `--quick` sets
    60 patches, 3 repetitions and 5 opens."""
    ap = bench_parser(patches=patches)
    ap.add_argument("--opens", type=int, default=20)
    ap.add_argument("--child", nargs=5, metavar=("KIND", "TOOL", "PATH", "THREADS", "N"))
    args = ap.parse_args()
    if args.child:
        kind, tool, path, threads, n = args.child
        if kind == "open":
            print(json.dumps(open_rates(tool, path, int(n))))
        else:
            print(json.dumps(random_patch_rates(tool, path, int(threads), int(n), args.reps)))
        sys.exit(0)
    if args.quick:
        args.patches, args.reps, args.opens = 60, 3, 5
    return args


def child_row(table: "Table", name: str, tool: str, command: List[str], unit: str = "patches/s") -> None:
    """Runs a child that prints {"rates": [...], "peak_mib": ...} as its last JSON line and adds its row:
    median with min-max; a child that fails is a FAILED row with its error, never a number."""
    p = subprocess.run(command, capture_output=True, text=True)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        table.add(name, f"{tool} FAILED (exit {p.returncode})", float("nan"), float("nan"), float("nan"), unit,
                  p.stderr.strip()[-200:])
        return
    r = json.loads(lines[-1])
    rates = sorted(r["rates"])
    table.add(name, tool, float(np.median(rates)), rates[0], rates[-1], unit, f"peak RSS {r['peak_mib']:.0f} MiB")


# Runs its arguments as a command and reports, as its last line of stderr, the command's wall seconds, CPU
# seconds and peak RSS (KiB), from wait4. A benchmark's own process is large (NumPy, tilewise) and a child's
# peak RSS starts from its parent's at fork: started from this small interpreter (python -S), a tool's peak is
# its own.
LAUNCHER = """
import os, sys, time
start = time.perf_counter()
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
sys.stderr.write("\\nlauncher %.6f %.3f %d\\n" % (time.perf_counter() - start, usage.ru_utime + usage.ru_stime,
                                                   usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def launched(command: List[str]) -> Tuple[subprocess.CompletedProcess, dict]:
    """Runs `command` in a process of its own through LAUNCHER: (the completed process, its stdout captured, and
    {"wall": s, "cpu": s, "peak_mib": MiB}); a failure raises with the end of its stderr."""
    p = subprocess.run([sys.executable, "-S", "-c", LAUNCHER, *command], capture_output=True, text=True)
    lines = p.stderr.strip().splitlines()
    if p.returncode != 0 or not lines or not lines[-1].startswith("launcher "):
        raise RuntimeError(f"{command[0]} exited {p.returncode}: {p.stderr.strip()[-400:]}")
    _, wall, cpu, kib = lines[-1].split()
    return p, dict(wall=float(wall), cpu=float(cpu), peak_mib=int(kib) / 1024)


def commit() -> str:
    """The short hash of the checkout's HEAD (written beside every table), or TILEWISE_BENCH_COMMIT where the
    caller knows better (the lent GPU machine's copy of the tree carries a .git that can lag its files)."""
    return os.environ.get("TILEWISE_BENCH_COMMIT") or subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()


def publish(table: "Table", filename: str, header: Optional[str] = None) -> None:
    """Prints the table under its header (default: the commit) and writes it to bench/out/FILENAME."""
    text = (header if header is not None else f"commit {commit()}\n\n") + table.markdown()
    print(text)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / filename).write_text(text)


class Table:
    """Rows of (workload, tool, value, unit, min, max); prints ratios to tilewise within each workload."""

    def __init__(self, title: str, base_tool: Optional[str] = None):
        """`base_tool`: the tilewise row other tools are compared with (default: the best tilewise row of the
        workload). Ratios read as tilewise's speed-up: for times (ms, s) the tool's time over tilewise's."""
        self.title = title
        self.base_tool = base_tool
        self.rows: List[dict] = []

    def add(self, workload: str, tool: str, value: float, lo: float, hi: float, unit: str, note: str = "") -> None:
        self.rows.append(dict(workload=workload, tool=tool, value=value, unit=unit, lo=lo, hi=hi, note=note))

    def markdown(self) -> str:
        lines = [f"### {self.title}", "",
                 "| workload | tool | median | min-max | unit | tilewise / tool | note |",
                 "|---|---|---:|---:|---|---:|---|"]
        for r in self.rows:
            time_unit = r["unit"] in ("ms", "s")
            ours = [x["value"] for x in self.rows if x["workload"] == r["workload"] and x["value"] == x["value"]
                    and (x["tool"] == self.base_tool if self.base_tool else x["tool"].startswith("tilewise"))]
            base = (min(ours) if time_unit else max(ours)) if ours else None
            speedup = (r["value"] / base if time_unit else base / r["value"]) if base and r["value"] else None
            ratio = f"{speedup:.2f}x" if speedup and not r["tool"].startswith("tilewise") else ""
            rng = f"{r['lo']:.1f}-{r['hi']:.1f}" if r["lo"] == r["lo"] else ""
            lines.append(f"| {r['workload']} | {r['tool']} | {r['value']:.1f} | {rng} | {r['unit']} | {ratio} | "
                         f"{r['note']} |")
        return "\n".join(lines) + "\n"
