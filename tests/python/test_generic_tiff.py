"""Generic pyramidal TIFF across writers, compressions and layouts, checked against tifffile's decode."""

from __future__ import annotations

import numpy as np
import pytest
import tifffile

import slidegen
import tilewise
from conftest import assert_same

LOSSLESS = [
    ("none", {}),
    ("deflate", {}),
    ("adobe_deflate", {}),
    ("lzw", {}),
    ("lzw", {"predictor": True}),
    ("deflate", {"predictor": True}),
    ("zstd", {}),
]


def check_levels_against_tifffile(path, expected_levels):
    slide = tilewise.open(path)
    assert slide.level_count == len(expected_levels)
    for level, expected in enumerate(expected_levels):
        h, w = expected.shape[:2]
        assert slide.levels[level].dimensions == (w, h)
        got = slide.read_region((0, 0), (w, h), level=level, use_cache=False)
        want = expected if expected.ndim == 3 else np.repeat(expected[..., None], 3, axis=2)
        assert_same(got, want[..., :3], f"{path.name} level {level}")


@pytest.mark.parametrize("compression,extra", LOSSLESS, ids=lambda v: str(v))
@pytest.mark.parametrize("tile", [(256, 256), (64, 128), (48, 32)], ids=lambda t: f"tile{t[1]}x{t[0]}")
def test_tiled_lossless_levels_exact(tmp_path, tissue, compression, extra, tile):
    path = tmp_path / "s.tif"
    images = slidegen.write_tifffile_pyramid(path, tissue, compression=compression, tile=tile, **extra)
    with tifffile.TiffFile(path) as tf:
        decoded = [p.asarray() for p in tf.pages]
    for a, b in zip(images, decoded):
        assert np.array_equal(a, b)  # the oracle agrees with what was written
    check_levels_against_tifffile(path, decoded)


@pytest.mark.parametrize("compression", ["none", "deflate", "lzw", "zstd", "jpeg"])
@pytest.mark.parametrize("rowsperstrip", [1, 37, 744])
def test_stripped_levels_match_tifffile(tmp_path, tissue, compression, rowsperstrip):
    path = tmp_path / "strips.tif"
    slidegen.write_tifffile_pyramid(path, tissue, compression=compression, tile=None, rowsperstrip=rowsperstrip)
    with tifffile.TiffFile(path) as tf:
        assert not tf.pages[0].is_tiled
        decoded = [p.asarray() for p in tf.pages]
    check_levels_against_tifffile(path, decoded)


@pytest.mark.parametrize("compression", ["jpeg", "deflate", "lzw"])
def test_jpeg_and_lossless_tiles_match_tifffile(tmp_path, tissue, compression):
    path = tmp_path / "t.tif"
    slidegen.write_tifffile_pyramid(path, tissue, compression=compression, tile=(128, 128))
    with tifffile.TiffFile(path) as tf:
        decoded = [p.asarray() for p in tf.pages]
    check_levels_against_tifffile(path, decoded)


@pytest.mark.parametrize("subifds", [False, True], ids=["multipage", "subifds"])
@pytest.mark.parametrize("bigtiff,byteorder", [(False, "<"), (False, ">"), (True, "<"), (True, ">")],
                         ids=["tiff-le", "tiff-be", "bigtiff-le", "bigtiff-be"])
def test_pyramid_layouts_and_byte_orders(tmp_path, tissue, subifds, bigtiff, byteorder):
    path = tmp_path / "p.tif"
    images = slidegen.write_tifffile_pyramid(path, tissue, compression="deflate", tile=(128, 128), levels=4,
                                             subifds=subifds, bigtiff=bigtiff, byteorder=byteorder)
    slide = tilewise.open(path)
    assert [lv.dimensions for lv in slide.levels] == [(im.shape[1], im.shape[0]) for im in images]
    w0, h0 = slide.dimensions
    for level, lv in enumerate(slide.levels):
        w, h = lv.dimensions
        assert lv.downsample == pytest.approx((w0 / w + h0 / h) / 2)
    check_levels_against_tifffile(path, images)


@pytest.mark.parametrize("kind", ["grey", "grey-miniswhite", "rgba"])
def test_grey_and_rgba_sources_yield_rgb(tmp_path, tissue, kind):
    path = tmp_path / f"{kind}.tif"
    if kind.startswith("grey"):
        image = tissue[..., 1].copy()
        photometric = "miniswhite" if kind.endswith("miniswhite") else "minisblack"
        slidegen.write_tifffile_pyramid(path, image, compression="deflate", tile=(64, 64), photometric=photometric)
        with tifffile.TiffFile(path) as tf:
            stored = [p.asarray() for p in tf.pages]
        expected = [(255 - s if photometric == "miniswhite" else s) for s in stored]
    else:
        alpha = np.full(tissue.shape[:2] + (1,), 200, np.uint8)
        image = np.concatenate([tissue, alpha], axis=2)
        slidegen.write_tifffile_pyramid(path, image, compression="lzw", tile=(64, 64))
        with tifffile.TiffFile(path) as tf:
            expected = [p.asarray() for p in tf.pages]
    check_levels_against_tifffile(path, expected)


def expected_region(image, x, y, w, h, fill=255):
    """The (h, w) window of image at (x, y), with `fill` where the window leaves the image."""
    out = np.full((h, w, 3), fill, np.uint8)
    ih, iw = image.shape[:2]
    x0, y0, x1, y1 = max(x, 0), max(y, 0), min(x + w, iw), min(y + h, ih)
    if x1 > x0 and y1 > y0:
        out[y0 - y : y1 - y, x0 - x : x1 - x] = image[y0:y1, x0:x1]
    return out


def test_random_regions_equal_crops_of_the_decoded_level(tmp_path, tissue):
    path = tmp_path / "r.tif"
    images = slidegen.write_tifffile_pyramid(path, tissue, compression="zstd", tile=(64, 96), levels=3)
    slide = tilewise.open(path)
    rng = np.random.default_rng(11)
    for level, image in enumerate(images):
        h, w = image.shape[:2]
        ds = slide.levels[level].downsample
        for _ in range(40):
            rw, rh = int(rng.integers(1, 300)), int(rng.integers(1, 300))
            x0, y0 = int(rng.integers(-400, slide.dimensions[0] + 100)), int(rng.integers(-400, slide.dimensions[1] + 100))
            got = slide.read_region((x0, y0), (rw, rh), level=level)
            # The level-0 location maps to the level by truncation toward zero.
            mx, my = int(x0 / ds), int(y0 / ds)
            assert_same(got, expected_region(image, mx, my, rw, rh), f"level {level} region ({x0},{y0}) {rw}x{rh}")


@pytest.mark.parametrize("damage", ["offset 0", "offset 8", "samples per pixel"])
def test_uncompressed_strips_that_cannot_hold_their_pixels_fail(tmp_path, tissue, damage):
    """An uncompressed strip whose offset lies in the file's header, or whose bytes are not its pixels (a wrong
    SamplesPerPixel makes every strip larger than its pixels), is an error naming the tile, never header
    bytes or shifted samples read as pixels."""
    path = tmp_path / "strips.tif"
    tifffile.imwrite(path, tissue[:256, :256], photometric="rgb", compression=None, rowsperstrip=64, metadata=None)
    if damage.startswith("offset"):
        with tifffile.TiffFile(path) as t:
            at = t.pages[0].tags["StripOffsets"].valueoffset
        with open(path, "r+b") as f:
            f.seek(at)
            f.write(int(damage.split()[1]).to_bytes(4, "little"))  # the first strip's offset
    else:
        with tifffile.TiffFile(path) as t:
            at = t.pages[0].tags["SamplesPerPixel"].valueoffset
            photometric_at = t.pages[0].tags["PhotometricInterpretation"].valueoffset
        with open(path, "r+b") as f:
            f.seek(at)
            f.write((1).to_bytes(2, "little"))  # grey, one sample: each strip holds 3x its pixels
            f.seek(photometric_at)
            f.write((1).to_bytes(2, "little"))
    slide = tilewise.open(path)
    with pytest.raises(tilewise.CorruptError, match=r"tile \(0,0\)") as e:
        slide.read_region((0, 0), (64, 64))
    assert ("more than the" if damage == "samples per pixel" else "overlap the file's") in str(e.value), e.value
