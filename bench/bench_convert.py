"""Writing slides: `tilewise convert` against the field's converters on the same input (the benchmark slide:
real tissue, JPEG q80 256-pixel tiles, written by libvips), 256x256 JPEG tiles, a full pyramid, every core.

- Pyramidal TIFF against libvips 8.14 (`vips tiffsave --tile --pyramid --bigtiff`, Debian's command; 2 x 2
  box averages down to one tile, as tilewise). At Q90 libvips 8.14 writes JPEG of RGB components (no colour
  transform, no chroma subsampling: about 2.3x the bytes; its tiffsave has no option to change that) and
  tilewise YCbCr 4:2:0 (its default) or 4:4:4 (`--no-subsample`, "tilewise-444"); at Q89 both write YCbCr
  4:2:0, like for like.
- DICOM WSI (Q90, YCbCr 4:2:0) against wsidicomizer (its own environment, build/bench-wsidicomizer, made on
  first use: `--force-transcoding --add-missing-levels`, its levels re-encoded from the source's own levels
  through OpenSlide, `-w` every core) and Orthanc's OrthancWSIDicomizer 1.1 (Debian's orthanc-wsi:
  `--reencode 1 --pyramid 1`, the pyramid rebuilt from level 0 and every tile re-encoded, `--threads` every
  core). With level 0's JPEG tiles copied as stored (tilewise `--copy-tiles`, Orthanc `--reencode 0`), the
  levels below rebuilt from the decoded level 0 by both.
- OME-Zarr 0.5 (zstd level 3, lossless, 256x256 chunks, 2 x 2 box means down to one chunk) against
  ome-zarr-py 0.18 (`ome_zarr.writer.write_image` of the slide's level 0 as tifffile's Zarr store through
  dask, `method="local_mean"`, chunks (1, 3, 1, 256, 256), zarr-python's default zstd, dask's threads on
  every core: the PyData path). Its level 0 equals tilewise's; its means round differently (within 1).

Each run is a process of its own (started from a small launcher, so that its peak RSS is its own), the tools
alternating run by run (this machine's speed drifts between minutes), timed from start to exit, its peak
RSS from wait4; the first round is a warm-up. Each output is
checked (levels, or DICOM instances and frames, counted), so a tool that writes less is not faster by it.
Last, the memory bound: a 100,000^2 slide (every tile one stored JPEG tile, `repeated_tile_slide`) converted
once by tilewise, its peak RSS reported.

    bench_convert.py [--size N] [--reps R] [--quick] [--workloads TEXT]  (TEXT: run only the workloads whose
    name contains it, e.g. "OME-Zarr"; the memory bound then runs only if its name matches too)"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from common import DATA, REPO, Table, bench_parser, benchmark_slide, launched, publish

TILEWISE = shutil.which("tilewise", path=str(Path(sys.executable).parent))
VIPS = shutil.which("vips")
ORTHANC = shutil.which("OrthancWSIDicomizer")
WSIDICOMIZER_ENV = REPO / "build" / "bench-wsidicomizer"
WSIDICOMIZER_PACKAGES = ["wsidicomizer[openslide]==0.26.*", "openslide-bin==4.0.*"]
CORES = str(os.cpu_count() or 1)


def wsidicomizer() -> str | None:
    """wsidicomizer's command, its environment made (and its packages installed) on first use; None when that
    fails."""
    exe = WSIDICOMIZER_ENV / "bin" / "wsidicomizer"
    stamp = WSIDICOMIZER_ENV / ".installed"
    try:
        if not stamp.exists() or stamp.read_text() != " ".join(WSIDICOMIZER_PACKAGES):
            subprocess.run([sys.executable, "-m", "venv", str(WSIDICOMIZER_ENV)], check=True)
            subprocess.run([str(WSIDICOMIZER_ENV / "bin" / "pip"), "install", "-q", *WSIDICOMIZER_PACKAGES], check=True)
            stamp.write_text(" ".join(WSIDICOMIZER_PACKAGES))
    except (subprocess.CalledProcessError, OSError) as e:
        print(f"wsidicomizer's environment could not be made: {e}", file=sys.stderr)
        return None
    return str(exe)


def ome_zarr_py() -> str | None:
    """This Python, when it has ome-zarr-py (requirements-oracles.txt); else None."""
    try:
        import ome_zarr  # noqa: F401
    except ImportError:
        return None
    return sys.executable


def timed(command: list[str]) -> tuple[float, float]:
    """(milliseconds, peak RSS MiB) of one process running `command` (common.launched); a failure raises with
    its stderr."""
    _, r = launched(command)
    return r["wall"] * 1000, r["peak_mib"]


# ome-zarr-py's writer on the slide's level 0 (tifffile's Zarr store, dask), a pyramid of box means down to
# one 256x256 chunk: the PyData world's way to write OME-Zarr.
OME_ZARR_PY = """
import sys
import dask.array as da
import tifffile
import zarr
from ome_zarr.writer import write_image

src, out = sys.argv[1], sys.argv[2]
level0 = da.from_zarr(zarr.open(tifffile.imread(src, aszarr=True, level=0), mode="r")).rechunk((2048, 2048, 3))
factors, side = [], max(level0.shape[:2])
while side > 256:
    side = (side + 1) // 2
    factors.append(2 ** (len(factors) + 1))
write_image(level0.transpose(2, 0, 1)[None, :, None], out, scale_factors=factors, method="local_mean", axes="tczyx",
            storage_options={"chunks": (1, 3, 1, 256, 256)})
"""


def command(tool: str, quality: int, src: Path, out: Path, exes: dict) -> list[str]:
    if tool == "tilewise-zarr":
        return [exes[tool], "convert", str(src), str(out), "--tile-size", "256"]
    if tool == "ome-zarr-py":
        return [exes[tool], "-c", OME_ZARR_PY, str(src), str(out)]
    if tool.startswith("tilewise-dicom"):
        extra = ["--copy-tiles"] if tool.endswith("copy") else []
        return [exes[tool], "convert", str(src), str(out), "--format", "dicom", "--quality", str(quality),
                "--tile-size", "256", *extra]
    if tool.startswith("tilewise"):
        extra = ["--no-subsample"] if tool == "tilewise-444" else []
        return [exes[tool], "convert", str(src), str(out), "--codec", "jpeg", "--quality", str(quality), "--tile-size",
                "256", *extra]
    if tool == "libvips":
        return [exes[tool], "tiffsave", str(src), str(out), "--tile", "--pyramid", "--tile-width=256",
                "--tile-height=256", "--compression=jpeg", f"--Q={quality}", "--bigtiff"]
    if tool == "wsidicomizer":
        return [exes[tool], "-i", str(src), "-o", str(out), "-t", "256", "-w", CORES, "--format", "jpeg", "--quality",
                str(quality), "--force-transcoding", "--no-label", "--no-overview", "--add-missing-levels"]
    return [exes[tool], "--threads", CORES, "--reencode", "0" if tool.endswith("copy") else "1", "--pyramid", "1",
            "--tile-width", "256",
            "--tile-height", "256", "--compression", "jpeg", "--jpeg-quality", str(quality), "--max-size", "0",
            "--folder", str(out), str(src)]


def repeated_tile_slide(size: int) -> Path:
    """A size x size JPEG BigTIFF whose every 256x256 tile is the same stored tile (one smooth tissue-coloured
    JPEG stream that all tile offsets point to): a slide of any size in a few MB of disk, for the memory
    bound of converting a large one. Cached under bench/data/."""
    import struct

    import imagecodecs

    path = DATA / f"repeated_{size}.tif"
    if path.exists():
        return path
    y, x = np.mgrid[0:256, 0:256]
    tile = np.stack([200 + 30 * np.sin(x / 40.0), 150 + 40 * np.cos(y / 30.0), 190 + 20 * np.sin((x + y) / 50.0)],
                    axis=-1).astype(np.uint8)
    stream = imagecodecs.jpeg8_encode(tile, level=85, subsampling=(2, 2))
    n = (-(-size // 256)) ** 2
    entries = [(256, 16, 1, size), (257, 16, 1, size), (258, 3, 3, None), (259, 3, 1, 7), (262, 3, 1, 6),
               (277, 3, 1, 3), (284, 3, 1, 1), (322, 3, 1, 256), (323, 3, 1, 256), (324, 16, n, None),
               (325, 16, n, None), (530, 3, 2, None)]
    tile_at = 16
    tables_at = tile_at + len(stream) + len(stream) % 2
    ifd_at = tables_at + 16 * n
    with open(path.with_suffix(".partial"), "wb") as f:
        f.write(b"II" + struct.pack("<HHHQ", 43, 8, 0, ifd_at))
        f.write(stream + b"\0" * (len(stream) % 2))
        f.write(struct.pack(f"<{n}Q", *([tile_at] * n)))  # every tile: the one stream
        f.write(struct.pack(f"<{n}Q", *([len(stream)] * n)))
        assert f.tell() == ifd_at
        f.write(struct.pack("<Q", len(entries)))
        for tag, kind, count, value in entries:
            if tag == 258:
                payload = struct.pack("<HHH", 8, 8, 8) + b"\0\0"
            elif tag == 324:
                payload = struct.pack("<Q", tables_at)
            elif tag == 325:
                payload = struct.pack("<Q", tables_at + 8 * n)
            elif tag == 530:
                payload = struct.pack("<HH", 2, 2) + b"\0" * 4
            elif kind == 3:
                payload = struct.pack("<H", value) + b"\0" * 6
            else:
                payload = struct.pack("<Q", value)
            f.write(struct.pack("<HHQ", tag, kind, count) + payload)
        f.write(struct.pack("<Q", 0))
    path.with_suffix(".partial").rename(path)
    return path


def written(tool: str, out: Path) -> str:
    """What a run wrote: levels of a TIFF (opened by tilewise), DICOM instances and frames (pydicom), or the
    arrays of an OME-Zarr group (zarr)."""
    if out.suffix == ".zarr":
        import zarr

        group = zarr.open_group(str(out), mode="r")
        shapes = [group[k].shape for k in sorted(group.array_keys(), key=lambda k: int(k.lstrip("s")))]
        size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
        return f"{len(shapes)} levels, level 0 {shapes[0]}, {size / 2**20:.0f} MiB"
    if out.is_dir():
        import pydicom

        frames = [int(pydicom.dcmread(f, stop_before_pixels=True).NumberOfFrames) for f in sorted(out.glob("*.dcm"))]
        size = sum(f.stat().st_size for f in out.glob("*.dcm"))
        return f"{len(frames)} instances, {sum(frames)} frames, {size / 2**20:.0f} MiB"
    import tilewise

    with tilewise.open(out) as s:
        return f"{s.level_count} levels, {out.stat().st_size / 2**20:.0f} MiB"


WORKLOADS = (
    ("TIFF, JPEG Q90 (libvips: RGB components; tilewise: YCbCr 4:2:0, -444: 4:4:4)", 90,
     ("tilewise", "tilewise-444", "libvips")),
    ("TIFF, JPEG Q89 (both YCbCr 4:2:0)", 89, ("tilewise", "libvips")),
    ("DICOM WSI, JPEG Q90 YCbCr 4:2:0", 90, ("tilewise-dicom", "wsidicomizer", "OrthancWSIDicomizer")),
    ("DICOM WSI, level 0's JPEG tiles copied, the levels below re-encoded at Q90", 90,
     ("tilewise-dicom-copy", "OrthancWSIDicomizer-copy")),
    ("OME-Zarr 0.5, zstd (lossless), 256x256 chunks, 2x2 box means", 0, ("tilewise-zarr", "ome-zarr-py")),
)


def main() -> None:
    ap = bench_parser(reps=5, size=20480)
    ap.add_argument("--workloads", default="", help="only the workloads whose name contains this text")
    args = ap.parse_args()
    if args.quick:
        args.size, args.reps = 4096, 2
    # Made in a child: a child process's peak RSS counts from the parent's at fork, so the parent stays small
    subprocess.run([sys.executable, "-c", f"from common import benchmark_slide; benchmark_slide({args.size})"],
                   cwd=Path(__file__).resolve().parent, check=True)
    src = benchmark_slide(args.size)
    exes = {"tilewise": TILEWISE, "tilewise-444": TILEWISE, "tilewise-dicom": TILEWISE, "tilewise-dicom-copy": TILEWISE,
            "libvips": VIPS, "wsidicomizer": wsidicomizer(), "OrthancWSIDicomizer": ORTHANC,
            "OrthancWSIDicomizer-copy": ORTHANC, "tilewise-zarr": TILEWISE, "ome-zarr-py": ome_zarr_py()}
    import tilewise

    with tilewise.open(src) as s:
        width, height = s.dimensions
    table = Table(f"CPU, {CORES} cores: {width}x{height} JPEG slide to a pyramidal TIFF, a DICOM WSI series and "
                  "OME-Zarr (256x256 tiles, full pyramid), each run its own process, the tools alternating")
    runs = [(workload, quality, tool) for workload, quality, tools in WORKLOADS for tool in tools
            if args.workloads in workload]
    times = {run: [] for run in runs}
    peaks = {run: [] for run in runs}
    notes, failed = {}, {}
    with tempfile.TemporaryDirectory(dir=src.parent) as tmp:
        for rep in range(args.reps + 1):
            for run in runs:
                workload, quality, tool = run
                if exes[tool] is None or run in failed:
                    continue
                dicom = workload.startswith("DICOM")
                out = Path(tmp) / ("out" if dicom else "out.zarr" if workload.startswith("OME-Zarr") else "out.tif")
                shutil.rmtree(out, ignore_errors=True) if out.is_dir() else out.unlink(missing_ok=True)
                if tool.startswith("OrthancWSIDicomizer"):
                    out.mkdir()
                try:
                    ms, peak = timed(command(tool, quality, src, out, exes))
                    notes[run] = written(tool, out)
                except RuntimeError as e:
                    failed[run] = str(e)[-200:]
                    continue
                if rep:
                    times[run].append(ms)
                    peaks[run].append(peak)
    for run in runs:
        workload, _, tool = run
        if exes[tool] is None:
            table.add(workload, f"{tool} not run (not installed)", float("nan"), float("nan"), float("nan"), "ms")
        elif run in failed:
            table.add(workload, f"{tool} FAILED", float("nan"), float("nan"), float("nan"), "ms", failed[run])
        else:
            t = sorted(times[run])
            table.add(workload, tool, float(np.median(t)), t[0], t[-1], "ms",
                      f"peak RSS {max(peaks[run]):.0f} MiB; {notes[run]}")
    # The memory bound: a 100,000^2 slide (one stored tile repeated) to a pyramidal TIFF, once
    big_size = 4096 if args.quick else 100_000
    if args.workloads not in "one stored tile repeated":
        publish(table, "convert.md")
        return
    big = repeated_tile_slide(big_size)
    with tempfile.TemporaryDirectory(dir=src.parent) as tmp:
        out = Path(tmp) / "big.tif"
        try:
            ms, peak = timed(command("tilewise", 90, big, out, exes))
            table.add(f"{big_size}x{big_size} (one stored tile repeated) to a pyramidal TIFF, once", "tilewise", ms, ms,
                      ms, "ms", f"peak RSS {peak:.0f} MiB; {written('tilewise', out)}")
        except RuntimeError as e:
            table.add(f"{big_size}x{big_size} to a pyramidal TIFF", "tilewise FAILED", float("nan"), float("nan"),
                      float("nan"), "ms", str(e)[-200:])
    publish(table, "convert.md")


if __name__ == "__main__":
    main()
