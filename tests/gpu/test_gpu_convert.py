"""convert on the GPU (device="cuda"): the outputs against the CPU path's, read back by tilewise's CPU path
(checked against OpenSlide and tifffile by the CPU suite) and, for JPEG tiles, decoded by Pillow's libjpeg.

Runs where test_gpu.py runs (scripts/gpu/test.sh); skips with the reason everywhere else.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import numpy as np
import pytest

import tilewise

tilewise._gpu.configure()
STATUS = tilewise._core.gpu_status(0)
pytestmark = [
    pytest.mark.skipif(not STATUS.ok, reason=f"no usable GPU: {STATUS.message}"),
]

DATA = Path(os.environ.get("TILEWISE_GPU_DATA", Path(__file__).resolve().parents[2] / ".gpu" / "data"))


def source(name: str) -> Path:
    path = DATA / name
    if not path.exists():
        pytest.skip(f"{path} is missing (scripts/gpu/prepare.sh makes .gpu/data on the developer machine)")
    return path


def levels(path: Path) -> list[np.ndarray]:
    with tilewise.open(path) as s:
        return [s.read_region((0, 0), s.levels[k].dimensions, level=k) for k in range(s.level_count)]


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return float("inf") if mse == 0 else 10 * np.log10(255.0 ** 2 / mse)


@pytest.mark.parametrize("subsample", [True, False])
def test_jpeg_on_the_gpu_is_as_faithful_as_the_cpu(tmp_path, subsample):
    """Every level of the GPU's JPEG pyramid has the CPU pyramid's size, and its PSNR against the source's
    level 0 (halved as the writers halve) is within 0.5 dB of the CPU's; the GPU encoded every tile (its
    streams are nvJPEG's, which Pillow decodes to what tilewise reads)."""
    src = source("bench_ihc_6144.tif")
    gpu, cpu = tmp_path / "gpu.tif", tmp_path / "cpu.tif"
    tilewise.convert(src, gpu, device="cuda", quality=90, subsample=subsample)
    tilewise.convert(src, cpu, quality=90, subsample=subsample)
    got, want = levels(gpu), levels(cpu)
    assert [g.shape for g in got] == [w.shape for w in want]
    with tilewise.open(src) as s:
        reference = s.read_region((0, 0), s.dimensions)
    for k, (g, w) in enumerate(zip(got, want)):
        if k > 0:  # the source halved as both writers halve (2 x 2 means, rounded half up)
            r = reference
            h, wd = r.shape[:2]
            r = np.pad(r, ((0, h % 2), (0, wd % 2), (0, 0)), mode="edge").astype(np.uint32)
            reference = ((r[0::2, 0::2] + r[1::2, 0::2] + r[0::2, 1::2] + r[1::2, 1::2] + 2) >> 2).astype(np.uint8)
        p_gpu, p_cpu = psnr(g, reference), psnr(w, reference)
        diff = np.abs(g.astype(int) - w.astype(int))
        print(f"\nlevel {k} {g.shape[1]}x{g.shape[0]}: PSNR GPU {p_gpu:.2f} dB, CPU {p_cpu:.2f} dB; "
              f"|GPU - CPU| mean {diff.mean():.3f} max {diff.max()}")
        if min(g.shape[:2]) >= 64:  # the smallest levels are a few blocks: their PSNR swings with one block
            assert p_gpu >= p_cpu - 0.5, f"level {k}: PSNR {p_gpu:.2f} dB on the GPU, {p_cpu:.2f} dB on the CPU"
    from PIL import Image
    import tifffile

    # Level 0's tiles as stored (tifffile's offsets), each a complete JPEG stream, decoded by Pillow's
    # libjpeg against tilewise's read of the same tile.
    with tilewise.open(gpu) as s, tifffile.TiffFile(gpu) as t, open(gpu, "rb") as f:
        page = t.pages[0]
        across = -(-page.imagewidth // page.tilewidth)
        for col, row in [(0, 0), (7, 11), (23, 23)]:
            i = row * across + col
            f.seek(page.dataoffsets[i])
            decoded = np.asarray(Image.open(io.BytesIO(f.read(page.databytecounts[i]))).convert("RGB"))
            mine = s.read_region((col * 256, row * 256), (256, 256))
            assert np.abs(decoded.astype(int) - mine.astype(int)).max() <= 3, (col, row)


def test_jpeg2000_lossless_on_the_gpu_is_the_cpu_pyramid_exactly(tmp_path):
    """A lossless source (deflate, decoded on the CPU and uploaded) to lossless JPEG 2000: every level of the
    GPU's pyramid equals the CPU's sample for sample (the halving kernel is the CPU's halving; nvJPEG2000's
    reversible coding loses nothing), and SVS's thumbnail, kept from a device level, too."""
    src = source("deflate.tif")
    for name in ("out.tif", "out.svs"):
        gpu, cpu = tmp_path / f"gpu-{name}", tmp_path / f"cpu-{name}"
        tilewise.convert(src, gpu, device="cuda", codec="jpeg2000-lossless", tile_size=128)
        tilewise.convert(src, cpu, codec="jpeg2000-lossless", tile_size=128)
        got, want = levels(gpu), levels(cpu)
        assert len(got) == len(want) >= 3
        for k, (g, w) in enumerate(zip(got, want)):
            np.testing.assert_array_equal(g, w, err_msg=f"{name} level {k}")
    with tilewise.open(tmp_path / "gpu-out.svs") as g, tilewise.open(tmp_path / "cpu-out.svs") as c:
        np.testing.assert_array_equal(np.asarray(g.associated_images["thumbnail"]), np.asarray(c.associated_images["thumbnail"]))


def test_lossy_jpeg2000_and_dicom_on_the_gpu(tmp_path):
    """Lossy JPEG 2000 (nvJPEG2000 at the PSNR the CPU encoder aims for) to an SVS, and JPEG frames to a DICOM
    series: both read back with the source's geometry and close to its pixels."""
    src = source("tifffile_jpeg.tif")
    with tilewise.open(src) as s:
        reference = s.read_region((0, 0), s.dimensions)
    tilewise.convert(src, tmp_path / "j2k.svs", device="cuda", codec="jpeg2000", quality=90)
    got = levels(tmp_path / "j2k.svs")[0]
    print(f"\nlossy JPEG 2000 on the GPU: PSNR {psnr(got, reference):.2f} dB (aimed at {20 + 90 / 4} dB)")
    assert got.shape == reference.shape and psnr(got, reference) >= 35
    with tilewise.open(src) as s:
        mpp = s.mpp
    if mpp is None:
        pytest.skip(f"{src.name} states no mpp, which DICOM needs")
    tilewise.convert(src, tmp_path / "series", format="dicom", device="cuda")
    instance = sorted((tmp_path / "series").glob("*.dcm"))[0]
    with tilewise.open(instance) as s:
        got = s.read_region((0, 0), s.dimensions)
    assert got.shape == reference.shape and psnr(got, reference) >= 35


def test_damaged_tiles_on_the_gpu_stop_or_become_background(tmp_path):
    """A damaged source tile stops the GPU conversion naming it, leaving nothing; with skip_damaged its
    pixels are written white (filled in device memory) and it is listed once."""
    src = source("damaged.tif")
    with pytest.raises(tilewise.CorruptError, match=r"damaged\.tif.*level 0 tile \(0,1\)"):
        tilewise.convert(src, tmp_path / "out.tif", device="cuda", codec="jpeg2000-lossless")
    assert not (tmp_path / "out.tif").exists()
    skipped = tilewise.convert(src, tmp_path / "out.tif", device="cuda", codec="jpeg2000-lossless", skip_damaged=True)
    assert len(skipped) == 1 and "level 0 tile (0,1)" in skipped[0]
    got = levels(tmp_path / "out.tif")[0]
    assert (got[128:256, 0:128] == 255).all()
    with tilewise.open(src) as s:
        np.testing.assert_array_equal(got[0:128], s.read_region((0, 0), (600, 128)))
    # Its odd levels (600 x 500 down to 150 x 125, 75 x 63, 38 x 32): the kernel repeats the edges as the CPU
    cpu = tmp_path / "cpu.tif"
    tilewise.convert(src, tmp_path / "gpu.tif", device="cuda", codec="jpeg2000-lossless", skip_damaged=True, tile_size=64)
    tilewise.convert(src, cpu, codec="jpeg2000-lossless", skip_damaged=True, tile_size=64)
    got, want = levels(tmp_path / "gpu.tif"), levels(cpu)
    assert [g.shape[:2] for g in got] == [w.shape[:2] for w in want] and want[3].shape[:2] == (63, 75)
    for k, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_array_equal(g, w, err_msg=f"level {k}")


def test_the_host_encodes_its_share_of_each_row_beside_the_gpu(tmp_path):
    """TILEWISE_GPU_ENCODE_HOST=40 (a process of its own: settings are read once): of each tile row of 8, the
    last 3 tiles are encoded by libjpeg-turbo on the host - byte for byte the CPU path's tiles, level 0 of a
    lossless source being the same pixels on both paths - and the first 5 by nvJPEG; every level reads back
    as close to the CPU's as the GPU alone gets."""
    import subprocess
    import sys

    import tifffile

    src = source("deflate.tif")
    shared, cpu = tmp_path / "shared.tif", tmp_path / "cpu.tif"
    code = f"import tilewise; tilewise.convert({str(src)!r}, {str(shared)!r}, device='cuda', tile_size=128)"
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ, "TILEWISE_GPU_ENCODE_HOST": "40"})
    tilewise.convert(src, cpu, tile_size=128)
    with tifffile.TiffFile(shared) as a, tifffile.TiffFile(cpu) as b, open(shared, "rb") as fa, open(cpu, "rb") as fb:
        pa, pb = a.pages[0], b.pages[0]
        across = -(-pa.imagewidth // pa.tilewidth)
        assert across == 8 and len(pa.dataoffsets) == len(pb.dataoffsets) == 48

        def tile(f, page, i):
            f.seek(page.dataoffsets[i])
            return f.read(page.databytecounts[i])

        for i in range(len(pa.dataoffsets)):
            same = tile(fa, pa, i) == tile(fb, pb, i)
            assert same == (i % across >= 5), f"level 0 tile {i}: equal to the CPU path's tile: {same}"
    for k, (g, w) in enumerate(zip(levels(shared), levels(cpu))):
        assert g.shape == w.shape
        assert psnr(g, w) >= 40, f"level {k}: PSNR {psnr(g, w):.2f} dB against the CPU path's"
