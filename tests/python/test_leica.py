"""Leica SCN beyond the shared vendor suite (test_vendors.py: every variant against OpenSlide 4.0.1, the
drop-in and the loader): main images at their offsets on the collection's canvas, damaged descriptions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import leica
import slidegen
import tilewise

openslide = pytest.importorskip("openslide")


@pytest.fixture(scope="module")
def world() -> np.ndarray:
    return slidegen.tissue_image(1600, 1200, seed=7)


def test_main_images_sit_at_their_offsets_on_the_collection(tmp_path, world):
    """With lossless tiles, level 0 is the world where a main image covers it and background elsewhere."""
    mains = [(64, 64, 640, 512), (800, 480, 704, 640)]
    slide = tilewise.open(leica.write_scn(tmp_path / "canvas.scn", world, mains=mains))
    level0 = slide.read_region((0, 0), slide.dimensions)
    covered = np.zeros(world.shape[:2], bool)
    for x, y, w, h in mains:
        covered[y:y + h, x:x + w] = True
        assert np.array_equal(level0[y:y + h, x:x + w], world[y:y + h, x:x + w])
    assert (level0[~covered] == 255).all()
    assert sorted(slide.stored_area(0, (0, 0), slide.dimensions)) != []


def _replace_xml(path: Path, old: str, new: str) -> None:
    data = path.read_bytes()
    assert len(new) <= len(old)
    path.write_bytes(data.replace(old.encode(), new.encode().ljust(len(old), b" "), 1))


@pytest.mark.parametrize("old,new,message", [
    ('offsetX="80000"', 'offsetX="x"', "offsetX"),
    ("<objective>20</objective>", "<objective>40</objective>", "dissimilar main images"),
    ("brightfield</illuminationSource></illuminationSettings></scanSettings></image><image name=\"main0\"",
     "fluorescent</illuminationSource></illuminationSettings></scanSettings></image><image name=\"main0\"",
     "Couldn't locate TIFF directory for quickhash"),
    ('ifd="5"', 'ifd="9"', "No TIFF directory 9"),
], ids=["bad-offset", "dissimilar", "two-mains-no-brightfield-macro", "missing-directory"])
def test_damaged_descriptions_fail_clearly(tmp_path, world, old, new, message):
    path = leica.write_scn(tmp_path / "d.scn", world, mains=[(160, 96, 960, 704), (160, 96, 960, 704)])
    _replace_xml(path, old, new)
    with pytest.raises(tilewise.TilewiseError, match=message):
        tilewise.open(path)
    with pytest.raises(openslide.OpenSlideError):
        openslide.OpenSlide(str(path))
