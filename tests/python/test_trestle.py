"""Trestle beyond the shared vendor suite (test_vendors.py: every variant against OpenSlide 4.0.1): tiles
overlapping by each level's OverlapsXY with the later one showing, the background colour, overlaps larger than
the tiles."""

from __future__ import annotations

import numpy as np
import pytest

import slidegen
import tilewise
import trestle
from test_formats import compare_with_openslide

openslide = pytest.importorskip("openslide")


@pytest.fixture(scope="module")
def world() -> np.ndarray:
    return slidegen.tissue_image(1200, 900, seed=9)


def test_overlaps_show_the_later_tile(tmp_path, world):
    path = trestle.write_trestle(tmp_path / "o.tif", world, compression="zlib", tint=30, overlaps=((16, 8),))
    slide = tilewise.open(path)
    row = slide.read_region((0, 5), (300, 1))[0].astype(int)
    truth = world[5, :300].astype(int)
    # tile 0 is tinted -60, tile 1 -30: tile 1 starts at 112 (128 - 16) and covers tile 0's last 16 columns
    assert (np.clip(truth[:112] - 60, 0, 255) == row[:112]).all()
    assert (np.clip(truth[112:128] - 30, 0, 255) == row[112:128]).all()


def test_background_colour(tmp_path, world):
    path = trestle.write_trestle(tmp_path / "b.tif", world, background="C08040", macro=False)
    slide, osr = tilewise.open(path), openslide.OpenSlide(str(path))
    assert slide.properties["openslide.background-color"] == osr.properties["openslide.background-color"] == "C08040"
    assert slide.background == (0xC0, 0x80, 0x40)
    w, h = slide.dimensions
    outside = slide.read_region((w - 10, h - 10), (40, 40))
    assert (outside[20:, 20:] == (0xC0, 0x80, 0x40)).all()
    compare_with_openslide(path, regions=0)  # pixels inside the level; no other fill involved


@pytest.mark.parametrize("desc,message", [("OverlapsXY= 200 8 8 4 0", "do not fit its tiles")])
def test_overlaps_larger_than_tiles_fail_clearly(tmp_path, world, desc, message):
    path = trestle.write_trestle(tmp_path / "d.tif", world)
    data = path.read_bytes()
    old = b"OverlapsXY= 16 8 8 4 0 0"
    assert old in data
    path.write_bytes(data.replace(old, desc.encode().ljust(len(old)), 1))
    with pytest.raises(tilewise.TilewiseError, match=message):
        tilewise.open(path)
