"""PyTorch: random 256x256 level-0 patches of the benchmark slide delivered as uint8 tensors through a real
torch DataLoader, against tilewise's raw batch loader (target: >= 0.9x) and MONAI's PatchWSIDataset on its
cuCIM backend (cuCIM's CPU path; target: tilewise >= 2x) with the same number of workers. Caches off. Each row
runs in its own child process over the same locations; medians of --reps runs, min-max beside.

    bench/bench_torch.py [--patches N] [--workers W] [--reps R] [--quick]
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np

from common import bench_parser, Table, benchmark_slide, publish

ROWS = {
    "raw": "tilewise Slide.read_regions (batch loader, no torch)",
    "batch0": "tilewise.torch.BatchDataset, DataLoader(num_workers=0)",
    "batch2": "tilewise.torch.BatchDataset, DataLoader(num_workers=2)",
    "patch": "tilewise.torch.PatchDataset, DataLoader(num_workers=W)",
    "monai": "MONAI PatchWSIDataset(reader='cuCIM'), DataLoader(num_workers=W)",
    "monai-openslide": "MONAI PatchWSIDataset(reader='OpenSlide'), DataLoader(num_workers=W)",
}
CHILD_TIMEOUT_S = 120


def child(kind: str, path: str, locs: np.ndarray, workers: int, batch: int) -> float:
    """Seconds to deliver every patch once (after one warm-up epoch)."""
    if kind.startswith("monai"):
        # cuCIM's plugin before torch: torch loads its bundled libcufile, and cuCIM's plugin library, when it
        # loads (at the first image opened), then runs GPUDirect Storage's cuFileDriverOpen, which on a
        # machine without an NVIDIA driver never returns. Loaded first, it finds no libcufile and goes on; the
        # forked DataLoader workers inherit it.
        import cucim

        cucim.CuImage(path)
    import tilewise

    tilewise.set_cache_capacity(0)
    if kind == "raw":
        slide = tilewise.open(path)

        def epoch():
            for _ in slide.read_regions(locs, (256, 256), batch_size=batch, num_workers=workers):
                pass
        epoch()
        t = time.perf_counter()
        epoch()
        return time.perf_counter() - t
    import torch
    from torch.utils.data import DataLoader

    torch.set_num_threads(1)
    if kind.startswith("batch"):
        from tilewise.torch import BatchDataset

        loader_workers = 0 if kind == "batch0" else 2
        ds = BatchDataset(path, locs, (256, 256), batch_size=batch, threads=max(1, workers // max(1, loader_workers)))
        loader = DataLoader(ds, batch_size=None, num_workers=loader_workers, persistent_workers=loader_workers > 0,
                            multiprocessing_context="fork" if loader_workers else None)
    elif kind == "patch":
        from tilewise.torch import PatchDataset

        ds = PatchDataset([(path, int(x), int(y)) for x, y in locs], (256, 256))
        tilewise.set_worker_threads(1)
        loader = DataLoader(ds, batch_size=batch, num_workers=workers, persistent_workers=True,
                            multiprocessing_context="fork")
    else:
        from monai.data import PatchWSIDataset

        data = [{"image": path, "location": [int(y), int(x)], "label": 0} for x, y in locs]  # MONAI: (row, column)
        reader = "OpenSlide" if kind == "monai-openslide" else "cuCIM"
        ds = PatchWSIDataset(data, patch_size=256, patch_level=0, reader=reader, center_location=False,
                             include_label=False)
        loader = DataLoader(ds, batch_size=batch, num_workers=workers, persistent_workers=True,
                            multiprocessing_context="fork")

    def epoch():
        n = 0
        for b in loader:
            image = b["image"] if isinstance(b, dict) else b
            n += len(image)
        assert n == len(locs), n
    epoch()
    t = time.perf_counter()
    epoch()
    return time.perf_counter() - t


def run_child(argv):
    """Runs one measurement in its own session, so that a child that hangs is killed with its DataLoader
    workers (orphaned workers would keep spinning and slow every later row)."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=CHILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return None
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # any worker left behind
        except ProcessLookupError:
            pass
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def main() -> None:
    ap = bench_parser(reps=5, size=20480, patches=2000)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--child", nargs=2, metavar=("KIND", "LOCATIONS"))
    args = ap.parse_args()
    if args.child:
        locs = np.load(args.child[1])
        print(json.dumps(child(args.child[0], str(benchmark_slide(args.size)), locs, args.workers, args.batch)))
        return
    if args.quick:
        args.size, args.patches, args.reps = 8192, 500, 3
    path = benchmark_slide(args.size)
    import tilewise

    w0, h0 = tilewise.open(path).dimensions
    rng = np.random.default_rng(0)
    locs = np.stack([rng.integers(0, w0 - 256, args.patches), rng.integers(0, h0 - 256, args.patches)], axis=1)
    loc_file = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"bench_torch_{os.getpid()}.npy")
    np.save(loc_file, locs)
    table = Table(f"PyTorch DataLoader, {os.cpu_count()} cores: {args.patches} random 256x256 L0 patches as uint8 "
                  f"tensors, batch {args.batch}, {args.workers} workers, {path.name}, caches off")
    n = len(locs)
    rates = {}
    try:
        for kind, label in ROWS.items():
            times, error = [], ""
            for _ in range(args.reps):
                done = run_child([sys.executable, __file__, "--size", str(args.size), "--workers", str(args.workers),
                                  "--batch", str(args.batch), "--child", kind, loc_file])
                if done is None:
                    error = f"HUNG: no result after {CHILD_TIMEOUT_S} s"
                    break
                if done.returncode != 0:
                    error = (done.stderr.strip().splitlines() or ["exit %d" % done.returncode])[-1]
                    break
                times.append(json.loads(done.stdout.strip().splitlines()[-1]))
            tool = {"monai": "MONAI + cuCIM (CPU)", "monai-openslide": "MONAI + OpenSlide"}.get(kind, "tilewise")
            if error:
                table.add("DataLoader patches", f"{tool}: {label}", float("nan"), float("nan"), float("nan"),
                          "patches/s", error if error.startswith("HUNG") else f"FAILED: {error[:160]}")
                continue
            med = sorted(times)[len(times) // 2]
            rates[kind] = n / med
            note = f"{len(times)} runs" + (f"; {rates[kind] / rates['raw']:.2f}x the raw loader"
                                           if kind != "raw" and "raw" in rates else "")
            table.add("DataLoader patches", f"{tool}: {label}", n / med, n / max(times), n / min(times), "patches/s",
                      note)
    finally:
        os.unlink(loc_file)
    publish(table, "bench_torch.md")


if __name__ == "__main__":
    main()
