"""Zeiss CZI beyond the shared vendor suite (test_vendors.py: every variant against OpenSlide 4.0.1, the
drop-in and the loader): the mosaic order of overlaps, JPEG XR (which OpenSlide cannot read) against czifile
(imagecodecs' jxrlib) and the lossless source, damaged files and subblocks, jxrlib crashes contained."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

import czi
import slidegen
import tilewise

openslide = pytest.importorskip("openslide")


@pytest.fixture(scope="module")
def world() -> np.ndarray:
    return slidegen.tissue_image(1200, 900, seed=11)


def test_overlaps_show_the_lower_mosaic_index(tmp_path):
    flat = np.full((500, 600, 3), 100, np.uint8)
    path = czi.write_czi(tmp_path / "o.czi", flat, overlap=(16, 8), tint=20, levels=1, scenes=((0, 0, 2, 1),))
    row = tilewise.open(path).read_region((0, 5), (240, 1))[0, :, 0].astype(int)
    # tile 0 (M 0) is tinted -40, tile 1 (M 1) -20; tile 1 starts at 112 but tile 0 shows up to 128
    assert (row[:128] == 60).all() and (row[128:] == 80).all()


def test_jpeg_xr_against_czifile_and_the_source(tmp_path, world):
    czifile = pytest.importorskip("czifile")
    path = czi.write_czi(tmp_path / "jxr.czi", world, compression=4, levels=1, tint=0)
    with pytest.raises(openslide.OpenSlideError, match="JPEG XR compression is not supported"):
        openslide.OpenSlide(str(path))
    slide = tilewise.open(path)
    ours = slide.read_region((0, 0), slide.dimensions)
    with czifile.CziFile(str(path)) as f:
        theirs = f.asarray()[0, 0][..., ::-1]  # czifile keeps CZI's BGR order
    assert np.array_equal(ours, theirs)
    assert np.abs(ours.astype(int) - world[:384, :512]).max() <= 8  # jxrlib at quality 0.95
    # a pyramid of JPEG XR subblocks and 16-bit samples
    pyr = tilewise.open(czi.write_czi(tmp_path / "jxr48.czi", world, compression=4, levels=3, pixel="bgr48", tint=0))
    raw = tilewise.open(czi.write_czi(tmp_path / "raw48.czi", world, compression=0, levels=3, pixel="bgr48", tint=0))
    for level in range(3):
        w, h = raw.levels[level].dimensions
        a = pyr.read_region((0, 0), (w, h), level=level).astype(int)
        b = raw.read_region((0, 0), (w, h), level=level).astype(int)
        assert np.abs(a - b).max() <= 8, level


def _patch(data: bytearray, old: bytes, new: bytes, last: bool = False) -> bytearray:
    at = data.rindex(old) if last else data.index(old)
    data[at:at + len(new)] = new
    return data


def _move_label_past_the_end(data: bytearray) -> bytearray:
    """The attachment directory's (the file's last) Label entry points its segment at offset 2**62."""
    entry = data.rindex(b"JPG\0\0\0\0\0Label\0") - 40
    struct.pack_into("<q", data, entry + 12, 2 ** 62)
    return data


@pytest.mark.parametrize("edit,message", [
    (lambda d: _patch(d, b"ZISRAWDIRECTORY", b"ZISRAWDIRECTORX"), 'No magic string "ZISRAWDIRECTORY"'),
    (lambda d: _patch(d, b"M\0\0\0", b"Q\0\0\0"), 'Unrecognized subblock dimension "Q"'),
    (lambda d: _patch(d, b"<SizeS>1</SizeS>", b"<SizeS>2</SizeS>"), "No subblocks for scene 1"),
    (lambda d: _patch(d, b"<SizeX>", b"<SizeQ>"), "Couldn't parse metadata XML|Couldn't read image dimensions"),
    # the last attachment directory is the file's own (the embedded preview CZI has one too)
    (lambda d: _patch(d, b"ZISRAWATTDIR", b"ZISRAWATTDIX", last=True), 'No magic string "ZISRAWATTDIR"'),
    (_move_label_past_the_end, 'Associated image "label" at offset 4611686018427387904 is past the end of the file'),
], ids=["directory-magic", "dimension", "scene", "size", "attachment-directory", "attachment-offset"])
def test_damaged_files_fail_clearly(tmp_path, world, edit, message):
    path = czi.write_czi(tmp_path / "d.czi", world[:400, :500], levels=1)
    path.write_bytes(bytes(edit(bytearray(path.read_bytes()))))
    with pytest.raises(tilewise.TilewiseError, match=message):
        tilewise.open(path)
    with pytest.raises(openslide.OpenSlideError):
        openslide.OpenSlide(str(path))


def test_a_subblock_too_large_to_decode_fails_at_open(tmp_path, world):
    """A directory entry claiming a 20,000^2 subblock (1.2 GB decoded, over the 512 MiB decode limit of every
    driver's unit) fails at open with its size, not at the first read's allocation."""
    path = czi.write_czi(tmp_path / "big.czi", world[:400, :500], levels=1)
    data = bytearray(path.read_bytes())
    directory = data.rindex(b"ZISRAWDIRECTORY")
    for dim in (b"X\0\0\0", b"Y\0\0\0"):  # the first entry's X and Y: size and stored size
        at = data.index(dim, directory)
        struct.pack_into("<i", data, at + 8, 20000)
        struct.pack_into("<i", data, at + 16, 20000)
    path.write_bytes(bytes(data))
    with pytest.raises(tilewise.TilewiseError, match="subblocks of 20000 x 20000 pixels exceed the 512 MiB decode limit"):
        tilewise.open(path)


def test_a_damaged_subblock_fails_only_its_reads(tmp_path, world):
    path = czi.write_czi(tmp_path / "z.czi", world[:400, :500], levels=1, compression=5)
    data = bytearray(path.read_bytes())
    first = data.index(b"ZISRAWSUBBLOCK") + 288 + 20
    data[first:first + 64] = bytes(64)
    path.write_bytes(bytes(data))
    slide = tilewise.open(path)
    with pytest.raises(tilewise.TilewiseError) as e:
        slide.read_region((0, 0), (64, 64))
    assert "z.czi" in str(e.value) and "level 0 tile (0,0)" in str(e.value)
    slide.read_region((300, 200), (64, 64))


def _czi_with_a_crashing_subblock(tmp_path, monkeypatch, pixels):
    """x.czi, 128 x 48: two 64 x 48 JPEG XR subblocks, the left one a stream on which jxrlib reads far out of
    bounds (found by fuzz_jpegxr: one byte of a good stream changed), the right one that stream repaired (the
    fuzz seed, a sawtooth of x + y in its first channel)."""
    regression = Path(__file__).parents[1] / "fuzz" / "regressions" / "jpegxr" / "jxrlib-significant-run-segv"
    crashing = regression.read_bytes()[5:]  # after fuzz_jpegxr's selector bytes
    good = bytearray(crashing)
    good[861] = 194  # the byte the fuzzer changed
    streams = [crashing, bytes(good)]  # the two JPEG XR subblocks' (the embedded macro CZI is uncompressed)
    encode = czi._encode
    monkeypatch.setattr(czi, "_encode", lambda pixels, compression, hilo: streams.pop(0) if compression == 4
                        else encode(pixels, compression, hilo))
    return czi.write_czi(tmp_path / "x.czi", pixels, tile=64, levels=1, compression=4, scenes=((0, 0, 2, 1),))


def test_a_jpeg_xr_stream_that_crashes_jxrlib_fails_only_its_reads(tmp_path, world, monkeypatch):
    """jxrlib reads far out of bounds on this 64x48 stream (found by fuzz_jpegxr; one byte of a good stream
    changed): the helper process dies, the read of that subblock is a clear error, the process and the other
    subblocks live on."""
    slide = tilewise.open(_czi_with_a_crashing_subblock(tmp_path, monkeypatch, world[:48, :128]))
    assert slide.dimensions == (128, 48)
    for _ in range(2):  # a failed tile is not cached as anything
        with pytest.raises(tilewise.TilewiseError) as e:
            slide.read_region((0, 0), (64, 48))
        message = str(e.value)
        assert "x.czi" in message and "level 0 tile" in message and "jpeg-xr: the decoder process died" in message
    right = np.asarray(slide.read_region((64, 0), (64, 48)))
    # the good stream is the fuzz seed: channel 0 (blue, stored first) a sawtooth of x + y
    expected = (np.add.outer(np.arange(48), np.arange(64)) * 3 % 251)
    inner = (expected > 16) & (expected < 235)
    assert np.abs(right[..., 2].astype(int) - expected)[inner].mean() < 6


def test_helper_processes_and_descriptors_stay_bounded_across_crashes(tmp_path, monkeypatch):
    """Each crash of the JPEG XR helper is reaped and its socket closed: reading the crashing subblock and a
    good one many times from several threads leaves no zombie, no extra descriptor and at most one idle
    helper per hardware thread."""
    import os
    from concurrent.futures import ThreadPoolExecutor

    slide = tilewise.open(_czi_with_a_crashing_subblock(tmp_path, monkeypatch, np.zeros((48, 128, 3), np.uint8)))

    def helpers():  # this process's JPEG XR helpers (other tests' servers are children too)
        pids = []
        for task in os.listdir("/proc/self/task"):
            try:
                with open(f"/proc/self/task/{task}/children") as f:
                    pids += f.read().split()
            except FileNotFoundError:  # a pool thread that ended since the listing
                pass
        named = []
        for pid in pids:
            try:
                with open(f"/proc/{pid}/comm") as f:
                    if f.read().strip() == "tilewise-jpegxr":  # the kernel keeps 15 characters of the name
                        named.append(pid)
            except FileNotFoundError:
                pass
        return named

    def read(i):
        try:
            slide.read_region((0 if i % 2 else 64, 0), (64, 48), use_cache=False)
            return "ok"
        except tilewise.TilewiseError:
            return "error"

    cores = os.cpu_count() or 1
    with ThreadPoolExecutor(4) as pool:  # the helpers of earlier tests are running already: warm up first
        list(pool.map(read, range(8)))
    fds_before = len(os.listdir("/proc/self/fd"))
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(read, range(400)))
    assert results.count("error") == 200 and results.count("ok") == 200
    # Up to one idle helper per core may stay (how many the warm-up left is a matter of timing); a socket
    # kept per crash would be 200 more.
    assert len(os.listdir("/proc/self/fd")) - fds_before <= cores
    alive = helpers()
    assert len(alive) <= cores
    for pid in alive:  # no zombie: every helper that died was reaped
        with open(f"/proc/{pid}/stat") as f:
            assert f.read().rsplit(")", 1)[1].split()[0] != "Z", pid
