"""Remote reads: the 20,480^2 benchmark slide (bench/common.benchmark_slide: libvips JPEG q80,
256^2 tiles) served by Debian's nginx on the loopback address behind tests/data/fault_proxy.py with 0 and
20 ms of latency per request; tilewise (`tilewise.open(url)`, its HTTP block cache) against tiffslide
(`tiffslide.TiffSlide(url)`, fsspec's HTTP file system and its read-ahead cache of 5 MB blocks; and with
64 KiB blocks, "tiffslide-64k"), each in its own process; tilewise's fetched-bytes cache is set to 2 MiB,
below the slide's size, as for real slides.

- open: seconds per open (median of 5; 3 for tiffslide at 20 ms) and the requests it took (the proxy's count);
- random 256x256 level-0 patches, tile caches off, 1 and 8 threads: patches/s and the bytes fetched per
  patch (the proxy's count), against what a perfect reader fetches (the compressed tiles each patch
  touches, from the file's tile tables);
- tilewise's batch loader (`read_regions`, batches of 64, 1 or 8 workers) over the same locations;
- tilewise with a disk cache (TILEWISE_HTTP_DISK_CACHE): the first pass of a process into a fresh cache
  (three processes, one pass each), then another process over the same locations (a later epoch), which
  reads from the disk.

    bench_remote.py [--patches N] [--reps R] [--quick] [--tools a,b] [--latencies 0,20]"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from common import bench_parser, REPO, Table, benchmark_slide, publish, read_all

sys.path.insert(0, str(REPO / "tests" / "data"))
import servers  # noqa: E402


def locations(w: int, h: int, n: int, seed: int = 7) -> list:
    rng = np.random.default_rng(seed)
    return [(int(rng.integers(0, w - 256)), int(rng.integers(0, h - 256))) for _ in range(n)]


def perfect_bytes(path: Path, locs: list) -> float:
    """Mean compressed bytes of the level-0 tiles each patch touches."""
    import tifffile

    with tifffile.TiffFile(path) as tf:
        page = tf.pages[0]
        across = -(-page.imagewidth // page.tilewidth)
        counts = page.databytecounts
        tw, th = page.tilewidth, page.tilelength
    total = 0
    for x, y in locs:
        for r in range(y // th, (y + 255) // th + 1):
            for c in range(x // tw, (x + 255) // tw + 1):
                total += counts[r * across + c]
    return total / len(locs)


def child(tool: str, url: str, kind: str, threads: int, n: int, reps: int) -> dict:
    if tool.startswith("tilewise"):
        if tool == "tilewise-disk":  # the folder comes from the parent (BENCH_DISK_CACHE)
            os.environ["TILEWISE_HTTP_DISK_CACHE"] = os.environ["BENCH_DISK_CACHE"]
        # A fetched-bytes cache smaller than the slide, as for the gigabyte slides of real use (with the
        # default 64 MiB much of a small slide would stay cached between passes).
        os.environ["TILEWISE_HTTP_CACHE_BYTES"] = "2M"
        import tilewise

        tilewise.set_cache_capacity(0)
        tilewise.set_worker_threads(1)

        def open_slide():
            return tilewise.open(url)

        def reader(s):
            return lambda loc: s.read_region(loc, (256, 256))
    else:
        import tiffslide

        options = {"block_size": 64 << 10} if tool == "tiffslide-64k" else None

        def open_slide():
            return tiffslide.TiffSlide(url, storage_options=options)

        def reader(s):
            return lambda loc: np.asarray(s.read_region(loc, 0, (256, 256), as_array=True))
    if kind == "open":
        times = []
        for _ in range(n):
            t = time.perf_counter()
            s = open_slide()
            times.append(time.perf_counter() - t)
            del s
        return {"seconds": times}
    s = open_slide()
    w, h = s.dimensions
    locs = locations(w, h, n)
    if kind == "loader":  # tilewise's batch loader: batches of 64, `threads` workers
        def read_batches(points):
            for _ in s.read_regions(np.asarray(points), (256, 256), batch_size=64, num_workers=threads):
                pass

        rates = []
        for rep in range(reps + 1):
            t = time.perf_counter()
            read_batches(locs)
            if rep:
                rates.append(n / (time.perf_counter() - t))
        return {"rates": rates}
    read = reader(s)
    if reps == 0:  # one timed pass over locations not read before, after a warm-up over others (connections)
        read_all(read, locations(w, h, n, seed=8), threads)
    rates = []
    for rep in range(max(1, reps + 1) if reps else 1):
        t = time.perf_counter()
        read_all(read, locs, threads)
        if rep or reps == 0:
            rates.append(n / (time.perf_counter() - t))
    return {"rates": rates}


def run_child(args: list, env: dict = None) -> dict:
    import subprocess

    p = subprocess.run([sys.executable, __file__, "--child", *map(str, args)], capture_output=True, text=True,
                       env=dict(os.environ, **(env or {})))
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        return {"error": (p.stderr.strip() or "no output")[-200:], "exit": p.returncode}
    return json.loads(lines[-1])


def main() -> None:
    ap = bench_parser(reps=3, patches=200)
    ap.add_argument("--tools", default="tilewise,tilewise-disk,tiffslide,tiffslide-64k",
                    help="comma-separated tools to run")
    ap.add_argument("--latencies", default="0,20", help="comma-separated injected latencies (ms)")
    ap.add_argument("--child", nargs=6, metavar=("TOOL", "URL", "KIND", "THREADS", "N", "REPS"))
    args = ap.parse_args()
    if args.child:
        tool, url, kind, threads, n, reps = args.child
        print(json.dumps(child(tool, url, kind, int(threads), int(n), int(reps))))
        return
    if args.quick:
        args.patches, args.reps = 40, 1
    path = benchmark_slide(4096 if args.quick else 20480)
    state = Path(tempfile.mkdtemp(prefix="bench-remote-"))
    web, base = servers.nginx(path.parent, state)
    perfect = None
    ncores = os.cpu_count() or 1
    table = Table(f"CPU, {ncores} cores: remote reads of {path.name} over HTTP on the loopback address (nginx "
                  "behind a latency proxy), each tool in its own process", base_tool="tilewise")
    try:
        tools = args.tools.split(",")
        for latency in (int(v) for v in args.latencies.split(",")):
            proxy, url = servers.fault_proxy(base, state, latency_ms=latency)
            slide_url = f"{url}/{path.name}"
            try:
                for tool in (t for t in tools if t != "tilewise-disk"):
                    opens = 3 if tool != "tilewise" and latency else 5
                    before = servers.proxy_stats(url)
                    r = run_child([tool, slide_url, "open", 1, opens, 0])
                    after = servers.proxy_stats(url)
                    name = f"open, {latency} ms latency"
                    if "error" in r:
                        table.add(name, f"{tool} FAILED (exit {r['exit']})", float("nan"), float("nan"), float("nan"),
                                  "ms", r["error"])
                    else:
                        ms = sorted(1000 * t for t in r["seconds"])
                        table.add(name, tool, float(np.median(ms)), ms[0], ms[-1], "ms",
                                  f"{(after['requests'] - before['requests']) / opens:.1f} requests per open")
                for threads in (1, 8):
                    name = f"random 256x256 patches, {latency} ms latency, {threads} thread{'s' if threads > 1 else ''}"
                    runs = []
                    if "tilewise" in tools:  # the batch loader: the patches' tiles fetched together
                        runs.append(("tilewise", f"tilewise read_regions ({threads} worker{'s' if threads > 1 else ''})",
                                     args.reps, None, "loader"))
                    for tool in tools:
                        if tool != "tilewise-disk":
                            runs.append((tool, tool, args.reps, None, "patches"))
                            continue
                        # Its first pass fills a fresh disk cache (whole 4 KiB pages); a second process, as a
                        # later epoch, reads from it.
                        folders = [{"BENCH_DISK_CACHE": str(state / f"disk-cache-{latency}-{threads}-{k}")}
                                   for k in range(3)]
                        runs.append(("tilewise-disk", "tilewise + disk cache, first pass", 0, folders, "patches"))
                        runs.append(("tilewise-disk", "tilewise + disk cache, next process", args.reps, folders[-1:],
                                     "patches"))
                    for tool, label, reps, envs, kind in runs:
                        before = servers.proxy_stats(url)
                        results = [run_child([tool, slide_url, kind, threads, args.patches, reps], env)
                                   for env in (envs or [None])]
                        after = servers.proxy_stats(url)
                        r = next((x for x in results if "error" in x), None) or {
                            "rates": [rate for x in results for rate in x["rates"]]}
                        if "error" in r:
                            table.add(name, f"{label} FAILED (exit {r['exit']})", float("nan"), float("nan"),
                                      float("nan"), "patches/s", r["error"])
                            continue
                        if perfect is None:
                            perfect = perfect_bytes(path, locations(*_dims(path), args.patches))
                        # reps 0: a warm-up pass and the timed one
                        per_patch = (after["bytes"] - before["bytes"]) / (args.patches * (reps + 1 if reps else 2) *
                                                                         len(results))
                        rates = sorted(r["rates"])
                        table.add(name, label, float(np.median(rates)), rates[0], rates[-1], "patches/s",
                                  f"{per_patch / 1024:.0f} KiB fetched per patch ({per_patch / perfect:.2f}x a "
                                  f"perfect reader's {perfect / 1024:.0f} KiB)")
            finally:
                servers.stop(proxy)
    finally:
        servers.stop(web)
    publish(table, "remote.md")


def _dims(path: Path):
    import tifffile

    with tifffile.TiffFile(path) as tf:
        return tf.pages[0].imagewidth, tf.pages[0].imagelength


if __name__ == "__main__":
    main()
