"""Positioned and vendor formats: random 256x256 level-0 patches from Leica SCN, Ventana BIF, Trestle, Sakura SVSlide and
Zeiss CZI slides of real tissue (`ihc.png` tiled; JPEG q85 tiles of 256 pixels; generated once into bench/data by the
test suite's writers), tilewise against OpenSlide 4.0.1, caches off, 1 thread and one per core, each tool
in its own process (MIRAX has its own benchmark, bench_mirax.py).

    bench_formats_iv.py [--patches N] [--reps R] [--quick]"""

from __future__ import annotations

import json
import os
import sys

import numpy as np

from common import bench_parser, DATA, REPO, Table, child_row, publish, random_patch_rates, slidegen

sys.path.insert(0, str(REPO / "tests" / "data"))
import czi  # noqa: E402
import leica  # noqa: E402
import sakura  # noqa: E402
import trestle  # noqa: E402
import ventana  # noqa: E402


def world(size: int) -> np.ndarray:
    block = slidegen.ihc_tissue(min(size, 4096), min(size, 4096), seed=5)
    return np.ascontiguousarray(np.tile(block, (size // block.shape[0] + 1, size // block.shape[1] + 1, 1))[:size, :size])


def slides(size: int) -> dict:
    """name -> (path, what it is); generated on first use."""
    folder = DATA / f"formats_iv_{size}"
    folder.mkdir(parents=True, exist_ok=True)
    made = {
        "Leica SCN": (folder / "slide.scn", "2 main images, JPEG tiles"),
        "Ventana BIF": (folder / "slide.bif", "camera tiles overlapping by 16 x 8, JPEG"),
        "Trestle": (folder / "slide.tif", "tiles overlapping by 16 x 8, JPEG"),
        "Sakura SVSlide": (folder / "slide.svslide", "3 grey JPEGs per tile in SQLite"),
        "Zeiss CZI": (folder / "slide.czi", "zstd v1 BGR24 subblocks of 512 pixels"),
    }
    if not (folder / ".complete").exists() or not made["Zeiss CZI"][0].exists():
        print(f"generating {folder.name} ...", flush=True)
        w = world(size)
        half = size // 2
        leica.write_scn(made["Leica SCN"][0], w, [(0, 0, half, size), (half, 0, half, size)], tile=256, dims=3,
                        compression="jpeg")
        n = (size - 256) // 240 + 1
        ventana.write_bif(made["Ventana BIF"][0], w, [(0, 0, n, (size - 256) // 248 + 1)], tile=256, overlap=(16, 8),
                          compression="jpeg", tint=0)
        trestle.write_trestle(made["Trestle"][0], w, tile=256, overlaps=((16, 8), (8, 4), (4, 2)), tint=0, trim=0)
        sakura.write_svslide(made["Sakura SVSlide"][0], w, tile=256, levels=3)
        czi.write_czi(made["Zeiss CZI"][0], w, tile=512, levels=3, compression=6, tint=0,
                      scenes=((0, 0, size // 512, size // 512),), origin=(0, 0))
        (folder / ".complete").write_text("")
    return made


def main() -> None:
    ap = bench_parser(reps=5, patches=400)
    ap.add_argument("--child", nargs=4, metavar=("TOOL", "PATH", "THREADS", "N"))
    args = ap.parse_args()
    if args.child:
        tool, path, threads, n = args.child
        print(json.dumps(random_patch_rates(tool, path, int(threads), int(n), args.reps)))
        return
    size = 2048 if args.quick else 8192
    if args.quick:
        args.patches, args.reps = 60, 3
    ncores = os.cpu_count() or 1
    table = Table(f"CPU, {ncores} cores: Formats IV, {size}x{size} slides of real tissue (JPEG q85, 256-pixel tiles), "
                  "random 256x256 level-0 patches, caches off, each tool in its own process")
    for name, (path, what) in slides(size).items():
        for threads in (1, ncores):
            workload = f"{name} ({what}), {threads} thread{'s' if threads > 1 else ''}"
            for tool in ("tilewise", "OpenSlide"):
                child_row(table, workload, tool, [sys.executable, __file__, "--reps", str(args.reps), "--child",
                                                  tool.lower(), str(path), str(threads), str(args.patches)])
    publish(table, "formats_iv.md")


if __name__ == "__main__":
    main()
