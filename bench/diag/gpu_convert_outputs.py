"""Writes what convert's GPU path makes of a small slide, so that readers tilewise did not write can check it
where they are installed (they are not on the GPU machine): run there with an output folder, then
bench/diag/check_gpu_convert.py on the developer machine over the folder that came back.

    gpu_convert_outputs.py OUT_DIR [--slide tifffile_jpeg.tif]

Writes OUT_DIR/{jpeg.tif, jpeg444.tif, j2k.svs, j2k-lossless.tif, series/} (each converted with
device="cuda") and the same from the CPU path as OUT_DIR/cpu-*, plus OUT_DIR/source.tif (a copy)."""

from __future__ import annotations

import argparse
import os
import shutil
from pathlib import Path

import tilewise

DATA = Path(os.environ.get("TILEWISE_GPU_DATA", Path(__file__).resolve().parents[2] / ".gpu" / "data"))

OUTPUTS = {
    "jpeg.tif": dict(codec="jpeg", quality=90),
    "jpeg444.tif": dict(codec="jpeg", quality=90, subsample=False),
    "j2k.svs": dict(codec="jpeg2000", quality=90),
    "j2k-lossless.tif": dict(codec="jpeg2000-lossless"),
    "series": dict(format="dicom", codec="jpeg", quality=90),
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--slide", default="tifffile_jpeg.tif")
    args = ap.parse_args()
    src = DATA / args.slide
    if not src.exists():
        raise SystemExit(f"{src} is missing (scripts/gpu/prepare.sh makes .gpu/data)")
    args.out.mkdir(parents=True, exist_ok=True)
    shutil.copy(src, args.out / "source.tif")
    for name, options in OUTPUTS.items():
        for prefix, device in (("", "cuda"), ("cpu-", "cpu")):
            tilewise.convert(src, args.out / f"{prefix}{name}", device=device, **options)
            print(f"{prefix}{name}: written on {device}")


if __name__ == "__main__":
    main()
