"""Windows low in the JPEG tiles of positioned levels (Leica, Ventana, Trestle, MIRAX: tiles drawn where the
slide says, overlapping or apart) are decoded from the MCU row above them (codecs/jpeg/tile_resume.cc) when the
tile cache is off, as on grid levels: every pixel is OpenSlide's, with the MCU index on and off."""

from __future__ import annotations

import numpy as np
import pytest

import leica
import mirax
import slidegen
import tilewise
import trestle
import ventana
from test_formats import compare_with_openslide

pytest.importorskip("openslide")


@pytest.fixture(scope="module")
def world() -> np.ndarray:
    return slidegen.tissue_image(1600, 1200, seed=11)


WRITERS = {
    "leica": lambda path, world: leica.write_scn(path / "s.scn", world, compression="jpeg",
                                                 mains=[(64, 64, 640, 512), (512, 320, 704, 640)]),
    "ventana": lambda path, world: ventana.write_bif(path / "s.bif", world, areas=[(40, 36, 6, 4)], compression="jpeg"),
    "trestle": lambda path, world: trestle.write_trestle(path / "s.tif", world),
    "mirax": lambda path, world: mirax.write_mirax(path / "s.mrxs", world, tile=128, overlap=(16, 12)),
}


@pytest.mark.parametrize("fmt", list(WRITERS))
def test_positioned_jpeg_tiles_resume_from_mcu_rows(tmp_path, world, fmt):
    path = WRITERS[fmt](tmp_path, world)
    tiles, index = tilewise.cache_stats()["capacity"], tilewise.mcu_index_stats()["capacity"]
    assert index > 0
    try:
        tilewise.set_cache_capacity(0)  # every cut tile is then decoded as a window
        for on in (True, False):
            tilewise.set_mcu_index_capacity(index if on else 0)
            before = tilewise.mcu_index_stats()["resumed"]
            slide = compare_with_openslide(path, regions=40, seed=3)
            resumed = tilewise.mcu_index_stats()["resumed"] - before
            assert (resumed > 10) if on else (resumed == 0), resumed
        assert slide.format == fmt
    finally:
        tilewise.set_cache_capacity(tiles)
        tilewise.set_mcu_index_capacity(index)


def test_a_closed_slides_mcu_index_entries_are_dropped(tmp_path, world):
    """The MCU index keeps a slide's checkpoints only while the slide is open: open, read and close, many
    times, leaves the index as it was (they used to stay until the budget pushed them out)."""
    path = tmp_path / "tiles.tif"
    slidegen.write_tifffile_pyramid(path, world, tile=(256, 256), compression="jpeg")
    tiles = tilewise.cache_stats()["capacity"]
    try:
        tilewise.set_cache_capacity(0)  # windows, not whole tiles: the index is used
        baseline = tilewise.mcu_index_stats()["entries"]
        rng = np.random.default_rng(5)
        for _ in range(5):
            slide = tilewise.open(path)
            before = tilewise.mcu_index_stats()["resumed"]
            for _ in range(20):
                slide.read_region((int(rng.integers(0, 1400)), int(rng.integers(100, 1000))), (64, 64))
            assert tilewise.mcu_index_stats()["resumed"] > before  # the index was used
            assert tilewise.mcu_index_stats()["entries"] > baseline
            del slide
            assert tilewise.mcu_index_stats()["entries"] == baseline
    finally:
        tilewise.set_cache_capacity(tiles)
