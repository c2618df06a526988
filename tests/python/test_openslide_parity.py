"""Pixels and properties against OpenSlide (openslide-python + openslide-bin), the reference reader.

JPEG tiles must be byte-identical (both decode with libjpeg-turbo's defaults). OpenSlide resamples a level
by the sub-pixel remainder of location / downsample (cairo bilinear); tilewise snaps to the level grid like
cuCIM and tiffslide, so locations at levels > 0 are chosen where location / downsample is an integer.
"""

from __future__ import annotations

import numpy as np
import pytest

import slidegen
import tilewise
from conftest import assert_same, shared_file

openslide = pytest.importorskip("openslide")


def openslide_rgb(osr, location, level, size):
    """OpenSlide's region as RGB plus a mask of the pixels it painted (alpha 255)."""
    rgba = np.asarray(osr.read_region(location, level, size))
    return rgba[..., :3], rgba[..., 3] == 255


def compare_region(slide, osr, x, y, level, w, h):
    ours = slide.read_region((x, y), (w, h), level=level)
    theirs, painted = openslide_rgb(osr, (x, y), level, (w, h))
    what = f"level {level} ({x},{y}) {w}x{h}"
    assert_same(np.where(painted[..., None], ours, 0), np.where(painted[..., None], theirs, 0), what)
    # Where OpenSlide paints nothing (outside the level) tilewise fills the background colour.
    assert (ours[~painted] == 255).all(), what


def region_cases(rng, slide, level, count=25):
    """Aligned, unaligned, 1x1, tile-sized, edge-crossing, partly and fully outside, in level pixels."""
    lw, lh = slide.levels[level].dimensions
    tw, th = slide.levels[level].tile_size
    cases = [(0, 0, tw, th), (tw, th, tw, th), (0, 0, 1, 1), (lw - 1, lh - 1, 1, 1), (tw - 3, th - 5, 7, 11),
             (lw - 50, lh - 40, 100, 80), (-20, -30, 60, 70), (lw + 10, 5, 20, 20), (-100, -100, 50, 50),
             (0, 0, lw, lh)]
    for _ in range(count):
        w, h = int(rng.integers(1, 400)), int(rng.integers(1, 400))
        cases.append((int(rng.integers(-w // 2, lw)), int(rng.integers(-h // 2, lh)), w, h))
    return cases


@pytest.mark.parametrize("quality", [80, 95])
def test_vips_jpeg_pyramid_matches_openslide_at_every_level(tmp_path, quality):
    path = tmp_path / "vips.tif"
    slidegen.write_vips_pyramid(path, slidegen.tissue_image(2048, 1536, seed=quality), quality=quality)
    slide, osr = tilewise.open(path), openslide.OpenSlide(str(path))
    assert [lv.dimensions for lv in slide.levels] == list(osr.level_dimensions)
    assert [lv.downsample for lv in slide.levels] == list(osr.level_downsamples)
    rng = np.random.default_rng(quality)
    for level in range(slide.level_count):
        ds = int(slide.levels[level].downsample)
        assert ds == slide.levels[level].downsample  # halving pyramid: integer downsamples
        for x, y, w, h in region_cases(rng, slide, level):
            compare_region(slide, osr, x * ds, y * ds, level, w, h)


def test_rgb_component_jpeg_matches_openslide(tmp_path):
    """Photometric RGB JPEG tiles (components stored as R, G, B, as Aperio writes them)."""
    path = tmp_path / "rgbjpeg.tif"
    slidegen.write_vips_pyramid(path, slidegen.tissue_image(1024, 768, seed=9), extra_args=["--rgbjpeg"])
    slide, osr = tilewise.open(path), openslide.OpenSlide(str(path))
    rng = np.random.default_rng(4)
    for level in range(slide.level_count):
        ds = int(slide.levels[level].downsample)
        for x, y, w, h in region_cases(rng, slide, level, count=10):
            compare_region(slide, osr, x * ds, y * ds, level, w, h)


@pytest.mark.parametrize("tile", [(256, 256), (128, 64)], ids=["256", "64x128"])
def test_tifffile_jpeg_tiles_match_openslide(tmp_path, tile):
    path = tmp_path / "tf.tif"
    slidegen.write_tifffile_pyramid(path, slidegen.tissue_image(1200, 900, seed=2), compression="jpeg", tile=tile)
    slide, osr = tilewise.open(path), openslide.OpenSlide(str(path))
    rng = np.random.default_rng(5)
    for x, y, w, h in region_cases(rng, slide, 0):
        compare_region(slide, osr, x, y, 0, w, h)


def test_boxes_tiff_matches_openslide_pixels_and_properties():
    path = shared_file("openslide-python/boxes.tiff")
    slide, osr = tilewise.open(path), openslide.OpenSlide(str(path))
    assert [lv.dimensions for lv in slide.levels] == list(osr.level_dimensions)
    assert [lv.downsample for lv in slide.levels] == list(osr.level_downsamples)
    for level, (w, h) in enumerate(osr.level_dimensions):
        compare_region(slide, osr, 0, 0, level, w, h)
    rng = np.random.default_rng(1)
    for x, y, w, h in region_cases(rng, slide, 0):
        compare_region(slide, osr, x, y, 0, w, h)
    ours = dict(slide.properties)
    for key, value in osr.properties.items():
        assert ours.get(key) == value, key
    assert slide.icc_profile == osr.color_profile.tobytes()
    assert len(slide.icc_profile) == int(osr.properties["openslide.icc-size"])


def test_small_svs_jpeg_rgb_tile_matches_openslide():
    path = shared_file("openslide-python/small.svs")
    slide, osr = tilewise.open(path), openslide.OpenSlide(str(path))
    assert slide.dimensions == osr.dimensions
    compare_region(slide, osr, 0, 0, 0, 16, 16)
    compare_region(slide, osr, -4, 3, 0, 30, 10)


def test_unreadable_svs_opens_and_reads_fail_clearly():
    path = shared_file("openslide-python/unreadable.svs")
    slide = tilewise.open(path)
    with pytest.raises(tilewise.CorruptError, match=r"unreadable\.svs: level 0 tile \(0,0\) at offset \d+: jpeg: "):
        slide.read_region((0, 0), (16, 16))


def test_unopenable_tiff_is_refused_clearly():
    path = shared_file("openslide-python/unopenable.tiff")
    with pytest.raises(tilewise.UnsupportedError, match=r"unopenable\.tiff: .*Unsupported TIFF compression: 52479"):
        tilewise.open(path)
