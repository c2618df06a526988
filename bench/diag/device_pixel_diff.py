"""How far device pixels are from the CPU path's (not a benchmark table): for each JPEG slide of
$TILEWISE_GPU_DATA, random regions of every level read to the device (the lanes forced: every tile decoded by
nvImageCodec) and into host memory, and the distribution of |device - host| over all their samples: the
share of samples off by more than 0, 1, 2, 3, 8 and 16 levels, the mean and the largest difference, and where
the largest ones sit (luma edges or chroma, by the host pixel's saturation). Run after scripts/gpu/test.sh's
set-up (scripts/gpu/probe.sh bench/diag/device_pixel_diff.py <<< 'TILEWISE_GPU_POLICY=gpu TILEWISE_GPU_CPU_ASSIST=0').
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np

import tilewise

DATA = Path(os.environ.get("TILEWISE_GPU_DATA", Path(__file__).resolve().parents[2] / ".gpu" / "data"))
SLIDES = ["tifffile_jpeg.tif", "vips_jpeg.tif", "dicom_jpeg/slide-level0.dcm", "bench_ihc_6144.tif"]


def host(array) -> np.ndarray:
    import cupy

    return cupy.asnumpy(cupy.from_dlpack(array))


def distribution(path: Path, regions: int = 40) -> dict:
    s = tilewise.open(path)
    rng = np.random.default_rng(0)
    counts = np.zeros(256, np.int64)
    worst_saturation = []
    before = tilewise._core.gpu_stats(0)
    for level in range(s.level_count):
        lw, lh = s.levels[level].dimensions
        ds = s.levels[level].downsample
        for _ in range(regions):
            w, h = int(rng.integers(64, min(lw, 700) + 1)), int(rng.integers(64, min(lh, 700) + 1))
            x, y = int(rng.integers(0, max(1, lw - w))), int(rng.integers(0, max(1, lh - h)))
            loc = (int(x * ds), int(y * ds))
            gpu = host(s.read_region(loc, (w, h), level=level, device="cuda", use_cache=False))
            cpu = s.read_region(loc, (w, h), level=level, use_cache=False)
            diff = np.abs(gpu.astype(np.int16) - cpu.astype(np.int16))
            counts += np.bincount(diff.ravel(), minlength=256)
            big = diff.max(axis=2) > 3
            if big.any():
                px = cpu[big].astype(np.int16)
                worst_saturation.extend((px.max(axis=1) - px.min(axis=1)).tolist()[:200])
    after = tilewise._core.gpu_stats(0)
    total = counts.sum()
    over = {k: float(counts[k + 1:].sum() / total) for k in (0, 1, 2, 3, 8, 16)}
    return {"slide": path.name, "samples": int(total), "share_over": over,
            "mean": float((counts * np.arange(256)).sum() / total), "max": int(np.nonzero(counts)[0].max()),
            "gpu_tiles": after["gpu_tiles"] - before["gpu_tiles"], "cpu_tiles": after["cpu_tiles"] - before["cpu_tiles"],
            "saturation_where_over_3": (float(np.median(worst_saturation)) if worst_saturation else None)}


def main() -> None:
    tilewise._gpu.configure()
    for name in SLIDES:
        path = DATA / name
        if not path.exists():
            print(json.dumps({"slide": name, "missing": True}))
            continue
        print(json.dumps(distribution(path)), flush=True)


if __name__ == "__main__":
    sys.exit(main())
