"""The tile cache shared by processes: 8 PyTorch DataLoader workers, each reading its patch list for two
epochs, the lists overlapping by half (each patch is in two workers' lists), decode about as often as one
process reading every list for two epochs with the in-process cache (target: <= 1.1x its decodes), where
per-process caches decode each shared tile in both workers; and 1,000 worker restarts (half of them killed with SIGKILL mid-read) leave no memory, file
descriptor or /dev/shm entry behind. Decodes are cache misses: every patch is an unaligned 256^2 read, so
every tile it touches is cut by its edge and goes through the cache. Each row in its own process.

    bench/bench_shared_cache.py [--patches N] [--reps R] [--restarts K] [--quick]
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

import numpy as np

from common import Table, bench_parser, benchmark_slide, peak_rss_mib, proc_kib, publish, rss_mib

WORKERS = 8
EPOCHS = 2
CACHE_BYTES = 1 << 30
SIZE = (256, 256)
MODES = {
    "one": "one process, every worker's list in turn, in-process cache",
    "per-process": f"DataLoader({WORKERS} workers), per-process caches",
    "shared": f"DataLoader({WORKERS} workers), shared cache (tilewise.set_shared_cache)",
}


def worker_lists(patches: int, seed: int) -> list[list[tuple[int, int]]]:
    """WORKERS lists of `patches` unaligned locations over the benchmark slide; worker w's second half is worker
    w+1's first half (circularly), so every location is in two lists."""
    rng = np.random.default_rng(seed)
    half = patches // 2
    pool = [(int(x) * 4 + 1, int(y) * 4 + 3) for x, y in rng.integers(0, (20480 - 264) // 4, (WORKERS * half, 2))]
    return [[pool[(w * half + i) % len(pool)] for i in range(2 * half)] for w in range(WORKERS)]


def child(mode: str, path: str, patches: int, reps: int) -> dict:
    import tilewise

    if mode == "shared":
        tilewise.set_shared_cache(CACHE_BYTES)
    else:
        tilewise.set_cache_capacity(CACHE_BYTES)
    decodes, seconds, cpu = [], [], []
    for rep in range(reps + 1):  # the first repetition is a warm-up (fresh lists each time)
        lists = worker_lists(patches, seed=rep)
        tilewise.clear_cache()
        tilewise.reset_cache_stats()
        start, times = time.perf_counter(), os.times()
        if mode == "one":
            slide = tilewise.open(path)
            for _ in range(EPOCHS):
                for locations in lists:
                    for loc in locations:
                        slide.read_region(loc, SIZE)
            misses = tilewise.cache_stats()["misses"]
        else:
            misses = dataloader_misses(path, lists)
        if rep:
            decodes.append(misses)
            seconds.append(time.perf_counter() - start)
            now = os.times()  # this process and its reaped workers
            cpu.append(sum(now[:4]) - sum(times[:4]))
    return {"decodes": decodes, "seconds": seconds, "cpu": cpu, "peak_mib": peak_rss_mib()}


def dataloader_misses(path: str, lists) -> int:
    """Every worker reads its list; the misses of all workers, summed."""
    import torch.utils.data as tud

    import tilewise

    class Patches(tud.IterableDataset):
        def __iter__(self):
            worker = tud.get_worker_info().id
            slide = tilewise.open(path)
            tilewise.reset_cache_stats()
            for _ in range(EPOCHS):
                for loc in lists[worker]:
                    yield slide.read_region(loc, SIZE)
            yield {"worker": worker, "misses": tilewise.cache_stats()["misses"]}

    loader = tud.DataLoader(Patches(), batch_size=None, num_workers=WORKERS, multiprocessing_context="fork")
    per_worker = {}
    for item in loader:
        if isinstance(item, dict):
            per_worker[int(item["worker"])] = int(item["misses"])
    assert len(per_worker) == WORKERS, per_worker
    return sum(per_worker.values())


def shmem_kib() -> float:
    """The host's shared memory (tmpfs, memfd and System V segments) now."""
    return proc_kib("/proc/meminfo", "Shmem")


def restarts_child(path: str, restarts: int) -> dict:
    """`restarts` workers forked one after another against one shared cache, each reading random patches; every
    other one is killed with SIGKILL after a random 5-60 ms (mid-read), the others end after 20 patches.
    Memory, descriptors and /dev/shm are sampled after the first tenth and at the end."""
    import multiprocessing

    import tilewise

    shmem_before = shmem_kib()
    tilewise.set_shared_cache(64 << 20)  # small: the workers evict and overwrite each other's tiles
    segment_mib = tilewise._core.shared_cache_segment_bytes() / (1 << 20)
    slide = tilewise.open(path)
    ctx = multiprocessing.get_context("fork")
    rng = random.Random(3)

    def work(seed: int, patches: int) -> None:
        r = random.Random(seed)
        for _ in range(patches):
            slide.read_region((r.randrange(1, 6000), r.randrange(1, 6000)), SIZE)

    samples = {}
    start = time.perf_counter()
    killed = 0
    for i in range(restarts):
        kill = i % 2 == 1
        p = ctx.Process(target=work, args=(i, 10_000 if kill else 20))
        p.start()
        if kill:
            time.sleep(rng.uniform(0.005, 0.06))
            os.kill(p.pid, signal.SIGKILL)
            killed += 1
        p.join()
        p.close()
        if i + 1 in (restarts // 10, restarts):
            samples[i + 1] = {"rss_mib": rss_mib(), "fds": len(os.listdir("/proc/self/fd")),
                              "shm_files": len(os.listdir("/dev/shm")), "shmem_mib": (shmem_kib() - shmem_before) / 1024}
    truth = [slide.read_region((100 + 300 * k, 200 + 250 * k), SIZE, use_cache=False) for k in range(10)]
    for _ in range(2):
        got = [slide.read_region((100 + 300 * k, 200 + 250 * k), SIZE) for k in range(10)]
    same = all(np.array_equal(a, b) for a, b in zip(got, truth))
    return {"samples": samples, "killed": killed, "segment_mib": segment_mib, "seconds": time.perf_counter() - start, "pixels_equal": same,
            "peak_mib": peak_rss_mib()}


def run_child(args: list[str]) -> dict:
    p = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        return {"error": f"exit {p.returncode}: {p.stderr.strip()[-300:]}"}
    return json.loads(lines[-1])


def main() -> None:
    ap = bench_parser(reps=3, patches=400)
    ap.add_argument("--restarts", type=int, default=1000)
    ap.add_argument("--child", nargs=2, metavar=("MODE", "PATH"))
    args = ap.parse_args()
    if args.child:
        mode, path = args.child
        out = restarts_child(path, args.restarts) if mode == "restarts" else child(mode, path, args.patches, args.reps)
        print(json.dumps(out))
        return
    if args.quick:
        args.patches, args.reps, args.restarts = 80, 1, 40
    path = str(benchmark_slide())
    table = Table(f"Shared tile cache: {WORKERS} DataLoader workers, {EPOCHS} epochs of lists overlapping by half",
                  base_tool=MODES["one"])
    results = {}
    for mode, label in MODES.items():
        r = run_child(["--child", mode, path, "--patches", str(args.patches), "--reps", str(args.reps)])
        results[mode] = r
        if "error" in r:
            table.add("decodes", f"{label} FAILED", float("nan"), float("nan"), float("nan"), "tiles", r["error"])
            continue
        d = sorted(r["decodes"])
        table.add("decodes", label, float(np.median(d)), d[0], d[-1], "tiles",
                  f"{WORKERS} x {args.patches} patches x {EPOCHS}; {np.median(r['seconds']):.2f} s, CPU "
                  f"{np.median(r['cpu']):.2f} s (workers included); peak RSS {r['peak_mib']:.0f} MiB")
    if "error" not in results["one"] and "error" not in results["shared"]:
        ratio = np.median(results["shared"]["decodes"]) / np.median(results["one"]["decodes"])
        print(f"shared / one process decodes: {ratio:.3f} (target <= 1.1)")
    r = run_child(["--child", "restarts", path, "--restarts", str(args.restarts)])
    if "error" in r:
        table.add("worker restarts", "FAILED", float("nan"), float("nan"), float("nan"), "", r["error"])
    else:
        first, last = (r["samples"][str(k)] for k in sorted(int(k) for k in r["samples"]))
        note = (f"{r['killed']} killed mid-read; after {args.restarts // 10} / {args.restarts}: host shared memory "
                f"+{first['shmem_mib']:.0f} / +{last['shmem_mib']:.0f} MiB (segment {r['segment_mib']:.0f} MiB), "
                f"fds {first['fds']} / {last['fds']}, /dev/shm entries {first['shm_files']} / {last['shm_files']}, "
                f"parent RSS {first['rss_mib']:.0f} / {last['rss_mib']:.0f} MiB; pixels equal after: "
                f"{r['pixels_equal']}")
        table.add("worker restarts", f"{args.restarts} restarts, shared cache", r["seconds"], r["seconds"],
                  r["seconds"], "s", note)
    publish(table, "shared_cache.md")


if __name__ == "__main__":
    main()
