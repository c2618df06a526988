"""Ventana BIF and Ventana TIFF beyond the shared vendor suite (test_vendors.py: every variant against
OpenSlide 4.0.1, the drop-in and the loader): the stitching that removes the joint overlaps, positions off the
pixel grid of smaller levels, damaged metadata."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import slidegen
import tilewise
import ventana

openslide = pytest.importorskip("openslide")


@pytest.fixture(scope="module")
def world() -> np.ndarray:
    return slidegen.tissue_image(1600, 1200, seed=8)


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
