"""Ventana BIF and Ventana TIFF: generated slides (tests/data/ventana.py) against OpenSlide 4.0.1 -
camera tiles stitched with their joint overlaps (serpentine tile numbers, confidence-weighted advance), areas
at their positions, the overlap removed at every level, macro and thumbnail, every property - plus positions
off the pixel grid, the compatibility modules and damaged metadata."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import slidegen
import tilewise
import ventana
from test_formats import compare_with_openslide

openslide = pytest.importorskip("openslide")


@pytest.fixture(scope="module")
def world() -> np.ndarray:
    return slidegen.tissue_image(1600, 1200, seed=8)


VARIANTS = {
    "one-area": dict(areas=[(40, 36, 6, 4)]),
    "two-areas": dict(areas=[(40, 36, 4, 3), (800, 480, 5, 4)]),
    "metadata-root-label-image": dict(areas=[(40, 36, 6, 4)], root="Metadata", macro_name="Label Image"),
    "jpeg": dict(areas=[(40, 36, 6, 4)], compression="jpeg"),
    "tinted-overlaps": dict(areas=[(40, 36, 6, 4)], tint=30),
    "ventana-tiff": dict(areas=[(40, 36, 6, 4)], bif=False),
}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_ventana_matches_openslide(tmp_path, world, variant):
    path = ventana.write_bif(tmp_path / "slide.bif", world, **VARIANTS[variant])
    slide = compare_with_openslide(path, regions=25)
    assert dict(slide.properties) == dict(openslide.OpenSlide(str(path)).properties)
    assert slide.format == "ventana"
    assert slide.properties["ventana.UnitNumber"] == "BI10N0123"
    assert "ventana.SlideAnnotation" not in slide.properties  # empty attributes are left out
    assert slide.properties["openslide.objective-power"] == "40"
    assert slide.mpp == pytest.approx((0.2325, 0.2325))
    assert set(slide.associated_images) == {"macro", "thumbnail"}


def test_stitching_removes_the_overlaps(tmp_path, world):
    """Untinted camera tiles cut from one image: the stitched level 0 is that image again (lossless)."""
    x, y, cols, rows = 40, 36, 6, 4
    path = ventana.write_bif(tmp_path / "s.bif", world, areas=[(x, y, cols, rows)], tint=0, overlap=(16, 8))
    slide = tilewise.open(path)
    w, h = 5 * 112 + 128, 3 * 120 + 128
    # The area sits at Pos-X; the topmost area's top is the slide's top.
    assert slide.dimensions == (x + w, h)
    assert np.array_equal(slide.read_region((x, 0), (w, h)), world[y:y + h, x:x + w])
    assert (slide.read_region((0, 0), (x, h)) == 255).all()
    assert slide.properties["openslide.region[0].width"] == str(w)


def test_an_advance_off_the_pixel_grid_of_smaller_levels(tmp_path, world):
    """An advance of 110 pixels lands on half pixels at 1/4 scale: OpenSlide paints those tiles at the
    fraction through cairo, tilewise rounds them; levels 0 and 1 stay byte-identical."""
    path = ventana.write_bif(tmp_path / "f.bif", world, areas=[(40, 36, 6, 4)], overlap=(18, 10), tint=0)
    slide, osr = tilewise.open(path), openslide.OpenSlide(str(path))
    assert [lv.dimensions for lv in slide.levels] == list(osr.level_dimensions)
    assert dict(slide.properties) == dict(osr.properties)
    for level, (w, h) in enumerate(osr.level_dimensions):
        ours = slide.read_region((0, 0), (w, h), level=level).astype(int)
        theirs = np.asarray(osr.read_region((0, 0), level, (w, h)))
        painted = theirs[..., 3] == 255
        diff = np.abs(ours - theirs[..., :3].astype(int))[painted]
        if level < 2:
            assert diff.max() == 0, level
        else:
            assert diff.mean() < 8 and np.median(diff) <= 4, (level, diff.mean())  # a tile misplaced: ~30


def test_compat_openslide_and_loader(tmp_path, world):
    import tilewise.openslide as tos

    path = ventana.write_bif(tmp_path / "c.bif", world, areas=[(40, 36, 4, 3), (800, 480, 5, 4)], tint=20)
    ours, theirs = tos.OpenSlide(str(path)), openslide.OpenSlide(str(path))
    assert tos.OpenSlide.detect_format(str(path)) == "ventana"
    rng = np.random.default_rng(4)
    for level in range(theirs.level_count):
        w, h = theirs.level_dimensions[level]
        ds = int(theirs.level_downsamples[level])
        for _ in range(10):
            rw, rh = int(rng.integers(1, 300)), int(rng.integers(1, 300))
            x, y = int(rng.integers(-rw, w)) * ds, int(rng.integers(-rh, h)) * ds
            assert np.array_equal(np.asarray(ours.read_region((x, y), level, (rw, rh))),
                                  np.asarray(theirs.read_region((x, y), level, (rw, rh)))), (level, x, y, rw, rh)
    slide = tilewise.open(path)
    locations = [(int(x), int(y)) for x, y in rng.integers(-50, 1300, (24, 2))]
    for level in (0, 2):
        got = np.concatenate(list(slide.read_regions(locations, (72, 64), level=level, batch_size=8, num_workers=2)))
        for i, loc in enumerate(locations):
            assert np.array_equal(got[i], slide.read_region(loc, (72, 64), level=level))


def _edit_xmp(path: Path, old: str, new: str) -> None:
    data = path.read_bytes()
    assert old.encode() in data and len(new) <= len(old)
    path.write_bytes(data.replace(old.encode(), new.encode().ljust(len(old), b" "), 1))


@pytest.mark.parametrize("old,new,message", [
    ('Width="128" Height="128" NumRows="4"', 'Width="64" Height="128" NumRows="4" ', "Tile size mismatch"),
    ('Direction="RIGHT" Tile1="1" Tile2="2"', 'Direction="LEFT" Tile1="1" Tile2="2" ', 'Bad direction attribute "LEFT"'),
    ('Direction="RIGHT" Tile1="1" Tile2="2"', 'Direction="RIGHT" Tile1="1" Tile2="9"', "Unexpected tile join"),
    ('Tile1="1" Tile2="2"', 'Tile1="0" Tile2="2"', "Tile number out of bounds: 0"),
    ("level=1 mag=20", "level=5 mag=20", "Unexpected encounter with level 5"),
    ("level=1 mag=20", "level=1 mag=80", "Unexpected magnification in level 1"),
    ('<AOI1 OriginX="0" OriginY="0"/>', "", "Missing or inconsistent region metadata"),
], ids=["tile-size", "direction", "join", "tile-number", "level-order", "magnification", "origins"])
def test_damaged_metadata_fails_clearly(tmp_path, world, old, new, message):
    path = ventana.write_bif(tmp_path / "d.bif", world, areas=[(40, 36, 6, 4)])
    _edit_xmp(path, old, new)
    with pytest.raises(tilewise.TilewiseError, match=message):
        tilewise.open(path)
    with pytest.raises(openslide.OpenSlideError):
        openslide.OpenSlide(str(path))
