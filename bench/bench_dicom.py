"""DICOM whole-slide images: a 20,480^2 JPEG pyramid of 12 instance files (9 levels, 256^2 frames
of real tissue at q85, plus label, overview and thumbnail; tests/data/dicom_wsi.py, generated once into
bench/data), tilewise against OpenSlide 4.0.1, each tool in its own process:

- opening the series from its level-0 file (the folder scanned, every instance's metadata read): the median
  of --opens opens, page cache warm for both;
- random 256x256 level-0 patches, caches off, 1 thread and one per core (peak RSS beside each), with the
  bound of a reader that decodes every frame a patch touches whole (libjpeg-turbo, from memory).

    bench_dicom.py [--patches N] [--reps R] [--opens K] [--quick]"""

from __future__ import annotations

import os
import sys

import numpy as np

from common import DATA, REPO, Table, child_row, jpeg_ceiling, open_and_patch_args, publish, slidegen

sys.path.insert(0, str(REPO / "tests" / "data"))
import dicom_wsi  # noqa: E402


def dicom_series(size: int, sparse: bool = False) -> "os.PathLike":
    folder = DATA / f"dicom_{size}{'_sparse' if sparse else ''}"
    first = folder / "slide-level0.dcm"
    if not (folder / ".complete").exists():
        print(f"generating {folder.name} ...", flush=True)
        folder.mkdir(parents=True, exist_ok=True)
        for f in folder.iterdir():
            f.unlink()
        block = slidegen.ihc_tissue(min(size, 4096), min(size, 4096), seed=5)
        image = np.tile(block, (size // block.shape[0] + 1, size // block.shape[1] + 1, 1))[:size, :size]
        levels = max(1, int(np.log2(size / 80)) + 1)  # down to ~80 pixels: 9 levels at 20,480
        dicom_wsi.write_series(folder, np.ascontiguousarray(image), levels=levels, tile=256, codec="jpeg",
                               quality=85, sparse_missing=[] if sparse else None)
        (folder / ".complete").write_text("")
    return first


def main() -> None:
    args = open_and_patch_args()
    size = 4096 if args.quick else 20480
    path = dicom_series(size)
    files = len([f for f in path.parent.iterdir() if f.suffix == ".dcm"])
    ncores = os.cpu_count() or 1
    table = Table(f"CPU, {ncores} cores: DICOM WSI, {size}x{size} JPEG pyramid in {files} instance files "
                  "(256x256 frames, q85, Basic Offset Tables), each tool in its own process")
    for sparse in (False, True):
        series = dicom_series(size, sparse)
        name = f"open the {files}-file series, " + ("TILED_SPARSE (per-frame positions)" if sparse else "TILED_FULL")
        for tool in ("tilewise", "OpenSlide"):
            child_row(table, name, tool,
                      [sys.executable, __file__, "--child", "open", tool.lower(), str(series), "1", str(args.opens)],
                      unit="opens/s")
    for threads in (1, ncores):
        name = f"random 256x256 patches, caches off, {threads} thread{'s' if threads > 1 else ''}"
        for tool in ("tilewise", "OpenSlide"):
            child_row(table, name, tool, [sys.executable, __file__, "--reps", str(args.reps), "--child", "patches",
                                          tool.lower(), str(path), str(threads), str(args.patches)])
        # What a reader that decodes each touched frame whole cannot beat: the 4 frames a patch touches,
        # decoded from memory by libjpeg-turbo with nothing else to do (tilewise decodes only windows).
        import pydicom

        ds = pydicom.dcmread(path)
        frames = list(pydicom.encaps.generate_frames(ds.PixelData, number_of_frames=int(ds.NumberOfFrames)))[:400]
        c = jpeg_ceiling(frames, threads=threads, reps=3)
        table.add(name, "libjpeg-turbo, 4 whole frames per patch", c["mpix_per_s"] * 1e6 / 65536 / 4, float("nan"),
                  float("nan"), "patches/s", "from memory: the bound of a whole-frame reader such as OpenSlide")
    publish(table, "dicom.md")


if __name__ == "__main__":
    main()
