"""Checks what bench/diag/gpu_convert_outputs.py wrote on the GPU machine with readers tilewise did not write:
OpenSlide 4.0.1 and tifffile (+ imagecodecs) for the TIFFs and the SVS (tifffile alone for a generic
TIFF of JPEG 2000 tiles, which OpenSlide reads in Aperio files only), pydicom, wsidicom, OpenSlide and
dicom3tools' dciodvfy for the DICOM series. Prints, per output and level, the PSNR of the GPU's and the CPU's
pixels against the source's (halved as the writers halve) and their largest difference; exits non-zero
when a reader refuses an output, a level's size differs from the CPU output's, or dciodvfy reports an error.

    check_gpu_convert.py FOLDER"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import openslide
import pydicom
import tifffile
import wsidicom


def halve(a: np.ndarray) -> np.ndarray:
    h, w = a.shape[:2]
    r = np.pad(a, ((0, h % 2), (0, w % 2), (0, 0)), mode="edge").astype(np.uint32)
    return ((r[0::2, 0::2] + r[1::2, 0::2] + r[0::2, 1::2] + r[1::2, 1::2] + 2) >> 2).astype(np.uint8)


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return float("inf") if mse == 0 else 10 * np.log10(255.0 ** 2 / mse)


def openslide_levels(path: Path) -> list[np.ndarray]:
    with openslide.OpenSlide(str(path)) as s:
        return [np.asarray(s.read_region((0, 0), k, s.level_dimensions[k]).convert("RGB"))
                for k in range(s.level_count)]


def tifffile_levels(path: Path) -> list[np.ndarray]:
    with tifffile.TiffFile(path) as tf:
        series = tf.series[0]
        return [level.asarray() for level in series.levels]


def dicom_checks(folder: Path) -> list[str]:
    problems = []
    tool = shutil.which("dciodvfy")
    for f in sorted(folder.glob("*.dcm")):
        ds = pydicom.dcmread(f)
        if ds.SOPClassUID != "1.2.840.10008.5.1.4.1.1.77.1.6":
            problems.append(f"{f.name}: SOP class {ds.SOPClassUID}")
        if tool:
            r = subprocess.run([tool, str(f)], capture_output=True, text=True)
            errors = [ln for ln in (r.stdout + r.stderr).splitlines() if ln.startswith("Error")]
            problems += [f"{f.name}: {e}" for e in errors]
    with wsidicom.WsiDicom.open(folder) as w:
        print(f"  wsidicom: {len(w.levels)} levels, base {w.size.width}x{w.size.height}")
    return problems


def main() -> int:
    folder = Path(sys.argv[1])
    reference = openslide_levels(folder / "source.tif")[0]
    failures = []
    for gpu in sorted(p for p in folder.iterdir() if not p.name.startswith(("cpu-", "source"))):
        cpu = folder / f"cpu-{gpu.name}"
        print(f"{gpu.name}:")
        try:
            if gpu.is_dir():  # OpenSlide opens a DICOM series by any of its instances
                failures += dicom_checks(gpu)
                got, want = openslide_levels(sorted(gpu.glob("*.dcm"))[0]), openslide_levels(sorted(cpu.glob("*.dcm"))[0])
            elif "j2k" in gpu.name and gpu.suffix == ".tif":  # OpenSlide reads JPEG 2000 tiles in Aperio files only
                got, want = tifffile_levels(gpu), tifffile_levels(cpu)
            else:
                got, want = openslide_levels(gpu), openslide_levels(cpu)
                through_tifffile = tifffile_levels(gpu)
                for k, (a, b) in enumerate(zip(got, through_tifffile)):
                    if a.shape != b.shape or np.abs(a.astype(int) - b.astype(int)).max() > 3:
                        failures.append(f"{gpu.name} level {k}: OpenSlide and tifffile disagree")
        except Exception as e:  # a reader refusing an output is the finding
            failures.append(f"{gpu.name}: {type(e).__name__}: {e}")
            continue
        ref = reference
        for k, (g, c) in enumerate(zip(got, want)):
            if k > 0:
                ref = halve(ref)
            if g.shape != c.shape:
                failures.append(f"{gpu.name} level {k}: {g.shape} on the GPU, {c.shape} on the CPU")
                continue
            same_grid = g.shape == ref.shape
            diff = np.abs(g.astype(int) - c.astype(int))
            print(f"  level {k} {g.shape[1]}x{g.shape[0]}: PSNR GPU {psnr(g, ref) if same_grid else float('nan'):.2f} dB, "
                  f"CPU {psnr(c, ref) if same_grid else float('nan'):.2f} dB; |GPU - CPU| mean {diff.mean():.3f} "
                  f"max {diff.max()}")
    for f in failures:
        print("FAILED:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
