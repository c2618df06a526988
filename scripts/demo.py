"""tilewise demo: the main job on a slide (a generated sample slide when none is given).

Prints the slide's info, reads regions at several levels, writes a PNG and prints throughput.
    .venv/bin/python scripts/demo.py [SLIDE]
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "data"))

import tilewise  # noqa: E402
import slidegen  # noqa: E402

OUT = REPO / "out"


def sample_slide() -> Path:
    """A 4096 x 3072 procedural-tissue pyramid (JPEG q80, 256 x 256 tiles, shared tables) written by libvips."""
    path = OUT / "sample.tif"
    if not path.exists():
        OUT.mkdir(exist_ok=True)
        print("generating the sample slide (procedural tissue, 4096 x 3072, JPEG tiles)...", flush=True)
        image = slidegen.tissue_image(4096, 3072, seed=7)
        tmp = path.with_suffix(".partial.tif")
        slidegen.write_vips_pyramid(tmp, image, quality=80)
        tmp.rename(path)
    return path


def cli() -> str:
    exe = shutil.which("tilewise", path=str(Path(sys.executable).parent))
    if exe is None:
        raise SystemExit("the tilewise command is not installed (run ./run)")
    return exe


def main() -> int:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else sample_slide()
    OUT.mkdir(exist_ok=True)
    info = subprocess.run([cli(), "info", str(path)])
    if info.returncode != 0:
        return info.returncode

    slide = tilewise.open(path)
    w0, h0 = slide.dimensions
    print(f"\nregions (1024 x 1024 at the centre of each level):")
    for level, lv in enumerate(slide.levels):
        lw, lh = lv.dimensions
        size = (min(1024, lw), min(1024, lh))
        x = int((lw - size[0]) // 2 * lv.downsample)
        y = int((lh - size[1]) // 2 * lv.downsample)
        t = time.perf_counter()
        region = slide.read_region((x, y), size, level=level)
        dt = time.perf_counter() - t
        print(f"  level {level}: {size[0]}x{size[1]} at ({x}, {y}) in {dt * 1e3:.1f} ms, mean RGB "
              f"{tuple(int(c) for c in region.reshape(-1, 3).mean(0))}")

    png = OUT / "demo_region.png"
    level = min(1, slide.level_count - 1)
    lw, lh = slide.levels[level].dimensions
    size = (min(1024, lw), min(1024, lh))
    result = subprocess.run([cli(), "region", str(path), "--level", str(level), "--x", "0", "--y", "0",
                             "--width", str(size[0]), "--height", str(size[1]), "-o", str(png)])
    if result.returncode != 0:
        return result.returncode
    print(f"\nwrote {png} (level {level}, {size[0]}x{size[1]})")

    print("\nthroughput:")
    rng = np.random.default_rng(0)
    n = 400
    locs = [(int(rng.integers(0, max(1, w0 - 256))), int(rng.integers(0, max(1, h0 - 256)))) for _ in range(n)]
    for cache in (False, True):
        tilewise.clear_cache()
        t = time.perf_counter()
        for loc in locs:
            slide.read_region(loc, (256, 256), use_cache=cache)
        dt = time.perf_counter() - t
        print(f"  random 256x256 patches, 1 thread, cache {'on ' if cache else 'off'}: {n / dt:8.0f} patches/s")
    workers = os.cpu_count() or 1
    t = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(lambda loc: slide.read_region(loc, (256, 256), use_cache=False), locs * 2))
    dt = time.perf_counter() - t
    print(f"  random 256x256 patches, {workers} threads, cache off: {2 * n / dt:8.0f} patches/s")
    t = time.perf_counter()
    whole = slide.read_region((0, 0), (w0, h0), level=0, use_cache=False)
    dt = time.perf_counter() - t
    print(f"  whole level 0 ({w0}x{h0}): {whole.shape[0] * whole.shape[1] / dt / 1e6:8.1f} MPix/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
