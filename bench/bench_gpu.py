"""GPU benchmark (workload 5 of ../shared/docs/benchmarks.md): workloads 1-4 with device output, in one run,
against cuCIM's GPU path (cucim-cu13 with ENABLE_CUSLIDE2=1, run in its own process because it needs
nvImageCodec 0.9 while tilewise pins 0.8), tilewise's own CPU path, and the raw nvImageCodec decode of the
same tiles (the ceiling: tilewise._bench.decode_rate, 1/2/4 threads with pinned input, each decoding for 2 s).

Medians of 5 timed repetitions after a warm-up; caches off. Prints one markdown table.
Usage: bench_gpu.py            (everything; slides from $TILEWISE_GPU_DATA, cuCIM from $TILEWISE_CUCIM_SITE)
       bench_gpu.py --loader W (one loader measurement as JSON; used for the lane/assist sweep)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import tifffile

import tilewise
from common import Table, jpeg_tiles, logged_runs, process_cpu_seconds, thread_cores, thread_cpu_seconds, time_runs

HERE = Path(__file__).resolve().parent
DATA = Path(os.environ.get("TILEWISE_GPU_DATA", HERE.parent / ".gpu" / "data"))
# TILEWISE_BENCH_SLIDE: another slide of DATA (or a path) for the same workloads, e.g. the 40,960^2 one that
# bench/make_large_slide.py writes on the GPU machine.
SLIDE = DATA / os.environ.get("TILEWISE_BENCH_SLIDE", "bench_ihc_6144.tif")
J2K_SLIDE = DATA / "bench_j2k_3840.svs"
N = 2000
# Patches per pass of the loader-only child (--loader): more makes a pass's start and drain a smaller part of it.
LOADER_N = int(os.environ.get("TILEWISE_BENCH_N", str(N)))
SIZE = 256
PREFETCH = int(os.environ.get("TILEWISE_BENCH_PREFETCH", "2"))  # the loaders' batches read ahead (both tools)


def locations(w0, h0, n=N, seed=0):
    rng = np.random.default_rng(seed)
    return np.stack([rng.integers(0, w0 - SIZE, n), rng.integers(0, h0 - SIZE, n)], axis=1).astype(np.int64)


def tiles_per_patch(locs, tile):
    x, y = locs[:, 0], locs[:, 1]
    across = (x + SIZE - 1) // tile - x // tile + 1
    down = (y + SIZE - 1) // tile - y // tile + 1
    return float(np.mean(across * down))


def sync():
    import cupy

    cupy.cuda.Device(0).synchronize()


def loader_run(s, locs, workers, device):
    def run():
        for _ in s.read_regions(locs, (SIZE, SIZE), batch_size=64, num_workers=workers, prefetch=PREFETCH, device=device):
            pass
        sync()
    return run


def loader_only(workers: int) -> None:
    """One loader measurement in this process (the lanes read their settings from the environment)."""
    tilewise._gpu.configure()
    tilewise.set_cache_capacity(0)
    s = tilewise.open(SLIDE)
    locs = locations(*s.dimensions, n=LOADER_N)
    run = loader_run(s, locs, workers, "cuda")
    run()  # warm-up outside the statistics: the first pass starts the lanes (seconds of decoder creation)
    run = logged_runs(run)  # AB_READS_LOG: each pass's start and end, for bench/diag/lane_gaps.py
    before = tilewise._core.gpu_stats(0)
    wall, cpu, threads0 = time.perf_counter(), process_cpu_seconds(), thread_cpu_seconds()
    reps = int(os.environ.get("TILEWISE_BENCH_REPS", "5"))  # more for a profiler's window
    r = time_runs(run, reps, warmup=0)
    took = time.perf_counter() - wall
    cores = (process_cpu_seconds() - cpu) / took  # host cores busy, on average
    by_thread = thread_cores(threads0, thread_cpu_seconds(), took)  # where those cores went
    after = tilewise._core.gpu_stats(0)
    gpu = after["gpu_tiles"] - before["gpu_tiles"]
    cpu = after["cpu_tiles"] - before["cpu_tiles"]
    # Tiles each batch needs (deduplicated within a batch, as the loader without helpers decodes them):
    # tiles/s beside patches/s, and of them the tiles the lanes decoded (gpu_tiles_per_s; the reading threads
    # decode the rest on the CPU while the lanes are busy), and how the regions were shared between device
    # batch reads and CPU helpers (gpu_stats' loader_* counts).
    per_pass = distinct_batch_tiles(locs, s.levels[0].tile_size[0])
    split = {k: after[f"loader_{k}"] - before[f"loader_{k}"] for k in ("gpu_regions", "gpu_reads", "cpu_regions")}
    regions = max(1, split["gpu_regions"] + split["cpu_regions"])
    print(json.dumps({"median": LOADER_N / r["median"], "min": LOADER_N / r["max"], "max": LOADER_N / r["min"]} | {
        "tiles_per_s": per_pass / r["median"], "gpu_tiles_per_s": per_pass / r["median"] * gpu / max(1, gpu + cpu),
        "patches_per_pass": LOADER_N, "cores": round(cores, 2),
        "lane_gpu_share": round(gpu / max(1, gpu + cpu), 3),
        "tiles_per_call": round(gpu / max(1, after["batches"] - before["batches"]), 1),
        "helper_share": round(split["cpu_regions"] / regions, 3),
        "regions_per_run": round(split["gpu_regions"] / max(1, split["gpu_reads"]), 1), "threads": by_thread}))


def distinct_batch_tiles(locs, tile, batch=64):
    """Distinct tiles of each batch of `batch` patches, summed over the batches."""
    x0, y0 = locs[:, 0] // tile, locs[:, 1] // tile
    x1, y1 = (locs[:, 0] + SIZE - 1) // tile, (locs[:, 1] + SIZE - 1) // tile
    total = 0
    for b in range(0, len(locs), batch):
        total += len({(x, y) for i in range(b, min(b + batch, len(locs)))
                      for x in range(x0[i], x1[i] + 1) for y in range(y0[i], y1[i] + 1)})
    return total


def region_only() -> None:
    """Workload 1 in this process."""
    tilewise._gpu.configure()
    tilewise.set_cache_capacity(0)
    s = tilewise.open(SLIDE)
    r = time_runs(lambda: (s.read_region((512, 512), (4096, 4096), device="cuda"), sync()), 5)
    print(json.dumps({k: 4096 * 4096 / 1e6 / v for k, v in r.items()}))


def subprocess_json(args, env, label="sub"):
    """Runs a Python child and returns the JSON of its last JSON line; its stderr goes to $OUT/<label>.err."""
    p = subprocess.run([sys.executable, *args], env=env, capture_output=True, timeout=400)
    out = p.stdout.decode("utf-8", "replace")
    err = p.stderr.decode("utf-8", "replace")
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], f"{label}.err").write_text(err)
    lines = [ln for ln in out.splitlines() if ln.startswith("{") or ln.startswith("[")]
    if p.returncode != 0 or not lines:
        tail = [ln for ln in err.splitlines() if ln.strip()][-3:]
        raise RuntimeError(f"exit {p.returncode}: " + " / ".join(tail)[-300:])
    return json.loads(lines[-1])


def rate_row(table, workload, tool, r, count, unit, note=""):
    table.add(workload, tool, count / r["median"], count / r["max"], count / r["min"], unit, note)


def cucim_env(cucim_site: str) -> dict:
    """The environment of a cuCIM child: its own site, nothing of tilewise's (not its nvImageCodec 0.8 site,
    nor the Debian libraries it was built with: an older OpenSSL/libjpeg ahead of the system's can crash
    cuCIM's dependencies)."""
    def keep(paths):
        return [p for p in paths.split(os.pathsep) if p and "tw-site" not in p and "tw-deps" not in p]
    env = dict(os.environ, PYTHONFAULTHANDLER="1",
               PYTHONPATH=os.pathsep.join([cucim_site] + keep(os.environ.get("PYTHONPATH", ""))),
               LD_LIBRARY_PATH=os.pathsep.join([f"{cucim_site}/nvidia/nvimgcodec", f"{cucim_site}/nvidia/nvjpeg2k/lib",
                                                f"{cucim_site}/nvidia/nvtiff/lib"]
                                               + keep(os.environ.get("LD_LIBRARY_PATH", ""))))
    env.pop("TILEWISE_NVIMGCODEC_DIR", None)
    return env


def cucim_rows(cores: int) -> list:
    """cuCIM's GPU path, same slide and locations: each workload in its own child process, with cuCIM's
    intended plugin (cuslide2, ENABLE_CUSLIDE2=1), so that a crash in one cannot switch another's path. A
    crashed or failed workload is reported as such, with its error; nothing falls back. The classic plugin
    is measured too only with BENCH_CUCIM_CLASSIC=1, as separate rows labelled with it."""
    cucim_site = os.environ.get("TILEWISE_CUCIM_SITE")
    nan = float("nan")
    if not cucim_site:
        return [("cuCIM", "cuCIM GPU path not run (TILEWISE_CUCIM_SITE unset)", nan, nan, nan, "")]
    workloads = [("region", "1: 4096^2 region", "MPix/s"), ("patches1", "2: random patches, 1 threads", "patches/s"),
                 ("patchesN", f"2: random patches, {cores} threads", "patches/s")]
    workloads += [(f"loader:{w}", f"3: loader, {w} workers", "patches/s") for w in (4, 8, cores)]
    workloads += [("tiling", "4: tiling level 0", "MPix/s")]
    plugins = ["1"] + (["0"] if os.environ.get("BENCH_CUCIM_CLASSIC") == "1" else [])
    rows = []
    for plugin in plugins:
        label = "cuslide2, ENABLE_CUSLIDE2=1" if plugin == "1" else "classic cuslide, ENABLE_CUSLIDE2=0"
        for key, workload, unit in workloads:
            try:
                for row in subprocess_json([str(HERE / "bench_cucim_gpu.py"), str(SLIDE), str(cores), key],
                                           dict(cucim_env(cucim_site), ENABLE_CUSLIDE2=plugin),
                                           f"cucim-{plugin}-{key.replace(':', '')}"):
                    rows.append((row["workload"], row["tool"], row["value"], row["lo"], row["hi"], row["unit"],
                                 row.get("note", "separate process")))
            except Exception as e:  # a crash is a result: report it, never replace it
                rows.append((workload, f"cuCIM GPU ({label}) CRASHED: {e}", nan, nan, nan, unit, "separate process"))
    return rows


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--loader":
        loader_only(int(sys.argv[2]))
        return
    if len(sys.argv) == 2 and sys.argv[1] == "--region":
        region_only()
        return
    if len(sys.argv) == 2 and sys.argv[1] == "--cucim-only":  # the cuCIM rows alone, as a table
        table = Table(f"cuCIM's GPU path on {SLIDE.name}: each workload in its own process")
        for row in cucim_rows(os.cpu_count() or 1):
            table.add(*row)
        print(table.markdown())
        return
    import tilewise._bench  # the raw decode ceiling (built with TILEWISE_BUILD_BENCH=ON)

    tilewise._gpu.configure()
    status = tilewise._core.gpu_status(0)
    if not status.ok:
        print(f"no GPU: {status.message}")
        return
    cores = os.cpu_count() or 1
    tilewise.set_cache_capacity(0)

    # First call (cold): a fresh process opens the slide and reads one patch to the device.
    cold = subprocess_json(["-c", "import json, time; t = time.perf_counter(); import tilewise; "
                            f"s = tilewise.open({str(SLIDE)!r}); s.read_region((0, 0), (256, 256), device='cuda'); "
                            "print(json.dumps({'s': time.perf_counter() - t}))"], dict(os.environ), "cold")["s"]

    # Child processes first, before this process holds a CUDA context and decoders (an idle context of
    # another process slowed a child's decoding ~3x in a trial run): cold start, cuCIM, lanes sweep.
    child_rows, sweep = [], []
    # Lanes and CPU assist, loader with all cores as workers (each setting in a fresh process).
    for lanes, assist in ((2, "1"), (4, "1"), (2, "0"), (4, "0")):
        env = dict(os.environ, TILEWISE_GPU_LANES=str(lanes), TILEWISE_GPU_CPU_ASSIST=assist)
        try:
            r = subprocess_json([__file__, "--loader", str(cores)], env, f"loader-lanes{lanes}-assist{assist}")
            sweep.append((lanes, assist, r))
        except Exception as e:  # report, keep going
            child_rows.append((f"3: loader, {cores} workers", f"lanes {lanes} assist {assist}: {e}",
                               float("nan"), float("nan"), float("nan"), ""))

    # Workload 1 in a process of its own.
    try:
        r = subprocess_json([__file__, "--region"], dict(os.environ), "region")
        child_rows.append(("1: 4096^2 region", "tilewise cuda", r["median"], r["max"], r["min"], "MPix/s",
                           "separate process"))
    except Exception as e:
        child_rows.append(("1: 4096^2 region", f"tilewise cuda: {e}", float("nan"), float("nan"), float("nan"), ""))

    child_rows += cucim_rows(cores)

    s = tilewise.open(SLIDE)
    w0, h0 = s.dimensions
    tile = s.levels[0].tile_size[0]
    locs = locations(w0, h0)
    tpp = tiles_per_patch(locs, tile)
    table = Table(f"GPU: {SLIDE.name} ({w0}x{h0}, 256x256 JPEG tiles), {N} random 256x256 patches "
                  f"({tpp:.2f} tiles each), caches off; {cores} CPU cores")

    # The ceiling: raw nvImageCodec decoding of the slide's level-0 tiles (tables spliced), pinned input.
    streams = jpeg_tiles(SLIDE, 0)
    ceiling = {}
    for threads in (1, 2, 4):
        rate, _ = tilewise._bench.decode_rate(streams, 256, 256, threads=threads, batch=64, seconds=2.0)
        ceiling[threads] = rate
        table.add("raw decode ceiling", f"nvImageCodec, {threads} thread(s), batch 64", rate, float("nan"),
                  float("nan"), "tiles/s", f"{rate * 65536 / 1e9:.2f} GPix/s")
    best = max(ceiling.values())

    def frac(patches_per_s, per_patch=tpp):
        return f"{patches_per_s * per_patch / best:.0%} of ceiling ({patches_per_s * per_patch:.0f} tiles/s)"

    # Workload 1: a 4096^2 region at level 0.
    for device in ("cuda", "cpu"):
        r = time_runs(lambda: (s.read_region((512, 512), (4096, 4096), device=device), sync()), 5)
        mpix = 4096 * 4096 / 1e6
        tool = "tilewise cuda" if device == "cuda" else "CPU path (tilewise)"
        table.add("1: 4096^2 region", tool, mpix / r["median"], mpix / r["max"], mpix / r["min"], "MPix/s",
                  frac(4096 * 4096 / 65536 / r["median"], 1) if device == "cuda" else "")

    # Workload 2: random patches from 1, 4 and all-core Python threads.
    for threads in (1, 4, cores):
        for device in ("cuda", "cpu"):
            def run():
                with ThreadPoolExecutor(threads) as pool:
                    list(pool.map(lambda loc: s.read_region((int(loc[0]), int(loc[1])), (SIZE, SIZE), device=device), locs))
                sync()
            r = time_runs(run, 5)
            tool = "tilewise cuda" if device == "cuda" else "CPU path (tilewise)"
            rate_row(table, f"2: random patches, {threads} threads", tool, r, N, "patches/s",
                     frac(N / r["median"]) if device == "cuda" else "")

    # Workload 3: the batch loader, batch 64.
    for workers in (4, 8, cores):
        for device in ("cuda", "cpu"):
            before = tilewise._core.gpu_stats(0)
            r = time_runs(loader_run(s, locs, workers, device), 5)
            after = tilewise._core.gpu_stats(0)
            gpu, cpu = after["gpu_tiles"] - before["gpu_tiles"], after["cpu_tiles"] - before["cpu_tiles"]
            tool = "tilewise cuda" if device == "cuda" else "CPU path (tilewise)"
            note = f"{frac(N / r['median'])}; {gpu / max(1, gpu + cpu):.0%} of tiles on the GPU" if device == "cuda" else ""
            rate_row(table, f"3: loader, {workers} workers", tool, r, N, "patches/s", note)

    # Workload 4: tiling, every aligned 256x256 patch of level 0 through the loader.
    grid = np.array([(x, y) for y in range(0, h0 - SIZE + 1, SIZE) for x in range(0, w0 - SIZE + 1, SIZE)], np.int64)
    for device in ("cuda", "cpu"):
        def tiling():
            for _ in s.read_regions(grid, (SIZE, SIZE), batch_size=64, num_workers=cores, prefetch=2, device=device):
                pass
            sync()
        r = time_runs(tiling, 5)
        mpix = len(grid) * SIZE * SIZE / 1e6
        tool = "tilewise cuda" if device == "cuda" else "CPU path (tilewise)"
        table.add("4: tiling level 0", tool, mpix / r["median"], mpix / r["max"], mpix / r["min"], "MPix/s",
                  frac(len(grid) / r["median"], 1) if device == "cuda" else "")

    # JPEG 2000 (Aperio 33003, 240x240 tiles): whole level 0 and the loader, device against CPU.
    if J2K_SLIDE.exists():
        j = tilewise.open(J2K_SLIDE)
        jw, jh = j.dimensions
        ntiles = -(-jw // 240) * -(-jh // 240)
        def split(before):
            after = tilewise._core.gpu_stats(0)
            gpu, cpu = after["gpu_tiles"] - before["gpu_tiles"], after["cpu_tiles"] - before["cpu_tiles"]
            return f"{gpu / max(1, gpu + cpu):.0%} of tiles on the GPU"

        jlocs = locations(jw, jh, 500, seed=1)
        for device in ("cuda", "cpu"):
            before = tilewise._core.gpu_stats(0)
            r = time_runs(lambda: (j.read_region((0, 0), (jw, jh), device=device), sync()), 5)
            tool = "tilewise cuda" if device == "cuda" else "CPU path (tilewise)"
            rate_row(table, f"JPEG 2000: whole level 0 ({jw}x{jh})", tool, r, ntiles, "tiles/s",
                     split(before) if device == "cuda" else "")
            before = tilewise._core.gpu_stats(0)
            r = time_runs(loader_run(j, jlocs, cores, device), 5)
            rate_row(table, f"JPEG 2000: loader, {cores} workers", tool, r, len(jlocs), "patches/s",
                     split(before) if device == "cuda" else "")
        # nvJPEG2000 alone on the same codestreams (with the YCbCr kernel), 1 and 4 threads.
        with tifffile.TiffFile(J2K_SLIDE) as tf:
            page, fh = tf.pages[0], tf.filehandle
            cs = []
            for off, n in zip(page.dataoffsets, page.databytecounts):
                fh.seek(off)
                cs.append(fh.read(n))
        for threads in (1, 4):
            rate, _ = tilewise._bench.decode_rate(cs, 240, 240, threads=threads, batch=16, seconds=2.0)
            table.add("JPEG 2000: raw nvJPEG2000 decode", f"nvImageCodec, {threads} thread(s), batch 16", rate,
                      float("nan"), float("nan"), "tiles/s")

    for lanes, assist, r in sweep:
        table.add(f"3: loader, {cores} workers",
                  f"tilewise cuda, {lanes} lanes, assist {'on' if assist == '1' else 'off'}",
                  r["median"], r["max"], r["min"], "patches/s",
                  f"{frac(r['median'])}; {r['lane_gpu_share']:.0%} of tiles on the GPU; separate process")
    for row in child_rows:
        table.add(*row)
    table.add("first call (cold)", "tilewise cuda: import, open, first 256x256 device read", cold, float("nan"),
              float("nan"), "s", "includes nvImageCodec and hardware decoder set-up")
    print()
    print(table.markdown())


if __name__ == "__main__":
    main()
