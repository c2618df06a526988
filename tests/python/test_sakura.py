"""Sakura SVSlide beyond the shared vendor suite (test_vendors.py: every variant against OpenSlide 4.0.1, the
drop-in and the loader): absent tiles transparent through the compatibility module, concurrent reads through
pooled connections, damaged databases and tiles."""

from __future__ import annotations

import sqlite3
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import sakura
import slidegen
import tilewise

openslide = pytest.importorskip("openslide")


@pytest.fixture(scope="module")
def image() -> np.ndarray:
    return slidegen.tissue_image(700, 500, seed=3)


def test_absent_tiles_are_transparent_through_the_compat_module(tmp_path, image):
    import tilewise.openslide as tos

    path = sakura.write_svslide(tmp_path / "a.svslide", image, missing=[(0, 1, 1)], missing_channel=[(0, 2, 0, 1)])
    ours, theirs = tos.OpenSlide(str(path)), openslide.OpenSlide(str(path))
    assert tos.OpenSlide.detect_format(str(path)) == "sakura"
    for level in range(theirs.level_count):
        w, h = theirs.level_dimensions[level]
        assert np.array_equal(np.asarray(ours.read_region((0, 0), level, (w, h))),
                              np.asarray(theirs.read_region((0, 0), level, (w, h)))), level
    slide = tilewise.open(path)
    assert slide.absent_tiles(0)[1, 1] and slide.absent_tiles(0)[0, 2] and not slide.absent_tiles(0)[0, 0]


def test_many_threads_read_through_pooled_connections(tmp_path, image):
    path = sakura.write_svslide(tmp_path / "t.svslide", image)
    slide = tilewise.open(path)
    tilewise.set_cache_capacity(0)
    try:
        reference = slide.read_region((0, 0), (700, 500))
        rng = np.random.default_rng(5)
        locs = [(int(x), int(y)) for x, y in rng.integers(0, 600, (200, 2))]

        def read(loc):
            x, y = loc
            return np.array_equal(slide.read_region(loc, (96, 64)), reference[y:y + 64, x:x + 96]) or y + 64 > 500

        with ThreadPoolExecutor(8) as pool:
            assert all(pool.map(read, locs))
        got = np.concatenate(list(slide.read_regions(locs[:40], (96, 64), batch_size=8, num_workers=4)))
        for i, loc in enumerate(locs[:40]):
            assert np.array_equal(got[i], slide.read_region(loc, (96, 64)))
    finally:
        tilewise.set_cache_capacity(256 << 20)


def _damage(path, sql):
    db = sqlite3.connect(path)
    db.executescript(sql)
    db.commit()
    db.close()


@pytest.mark.parametrize("sql,message", [
    ("UPDATE SVSlideBlobs SET data = 'NotSakura' WHERE id = '++MagicBytes';", None),
    ("UPDATE SVSlideBlobs SET id = 'T;0|0;1;0;00' WHERE id = 'T;0|0;1;0;0';", "Couldn't round-trip tile ID"),
    ("UPDATE SVSlideBlobs SET id = 'T;0|0;1;7;0' WHERE id = 'T;0|0;1;0;0';", "Bad field value in tile ID"),
    ("UPDATE SVSlideBlobs SET id = 'T;0|0;3;0;0' WHERE id = 'T;0|0;1;0;0';", "Invalid downsample 3"),
    ("UPDATE SVSlideBlobs SET data = x'0000' WHERE id = 'Header';", "Header is too short"),
    ("INSERT INTO DataManagerSQLiteConfigXPO (TableName) VALUES ('Other');", None),
], ids=["magic", "round-trip", "colour", "downsample", "header", "two-tables"])
def test_damaged_databases_fail_clearly(tmp_path, image, sql, message):
    path = sakura.write_svslide(tmp_path / "d.svslide", image, levels=1)
    _damage(path, sql)
    with pytest.raises(tilewise.TilewiseError, match=message or "not a TIFF file"):
        tilewise.open(path)
    with pytest.raises(openslide.OpenSlideError):
        openslide.OpenSlide(str(path))


def test_a_damaged_tile_fails_its_reads_with_the_database_and_tile(tmp_path, image):
    path = sakura.write_svslide(tmp_path / "j.svslide", image, levels=1)
    _damage(path, "UPDATE SVSlideBlobs SET data = x'FFD8FFE000104A464946' WHERE id = 'T;128|0;1;1;0';")
    slide = tilewise.open(path)
    with pytest.raises(tilewise.TilewiseError) as e:
        slide.read_region((128, 0), (64, 64))
    assert "j.svslide" in str(e.value) and "level 0 tile (1,0)" in str(e.value) and "green channel" in str(e.value)
    slide.read_region((0, 0), (64, 64))
