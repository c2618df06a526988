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


def _channels(world: np.ndarray, dtype, count: int, h: int, w: int) -> np.ndarray:
    """(count, h, w) grey channels of the world in `dtype`'s range."""
    base = world[:h, :w].astype(np.float64)
    scale = 200 if dtype == np.uint16 else 1
    return np.stack([np.clip((base[..., c % 3] + 11 * c) * scale, 0, np.iinfo(dtype).max).astype(dtype)
                     for c in range(count)])


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
def test_fluorescence_images_are_scenes_of_channels(tmp_path, world, dtype):
    """A brightfield main image and a fluorescence image: scene 0 is OpenSlide's slide (the brightfield
    composite, fluorescence left out); scene 1 the fluorescence image's channels at their bit depth, every
    level checked against tifffile's reading of the same file."""
    tifffile = pytest.importorskip("tifffile")
    channels = _channels(world, dtype, 3, 512, 640)
    names = ["DAPI", "FITC", "TRITC"]
    path = leica.write_scn(tmp_path / "f.scn", world, mains=[(64, 64, 640, 512)],
                           fluorescence=[((800, 480, 640, 512), channels, names)], compression="zlib")
    ref = openslide.OpenSlide(str(path))
    with tilewise.open(path) as slide:
        assert [s.name for s in slide.scenes] == ["brightfield", "fluorescence0"]
        assert slide.is_rgb and slide.dimensions == ref.dimensions
        region = slide.read_region((64, 64), (640, 512))  # the brightfield main image, not the fluorescence one
        assert np.array_equal(region[..., :3], np.asarray(ref.read_region((64, 64), 0, (640, 512)))[..., :3])
    with tifffile.TiffFile(path) as tf:
        series = [s for s in tf.series if s.name == "fluorescence0"][0]
        levels = [series.levels[k].asarray() for k in range(len(series.levels))]
        levels = [a.reshape((3, -1) + a.shape[-2:]) for a in levels]  # (C, Z, Y, X); tifffile drops a Z of 1
    with tilewise.open(path, scene=1) as slide:
        assert not slide.is_rgb and slide.dtype == np.dtype(dtype)
        assert [ch.name for ch in slide.channels] == names
        assert slide.shape(0) == (1, 3, 1, 512, 640)
        assert len(slide.levels) == len(levels) == 3
        for k, want in enumerate(levels):
            h, w = want.shape[-2:]
            got = slide.read_region((0, 0), (w, h), k, c=None)
            for c in range(3):
                np.testing.assert_array_equal(got[..., c], want[c, 0], err_msg=f"level {k} channel {c}")
        np.testing.assert_array_equal(levels[0][:, 0], channels)


def test_fluorescence_only_slide_opens_its_image(tmp_path, world):
    """Without a brightfield main image the fluorescence image is the slide; OpenSlide 4.0.1 refuses the
    file, and so does the drop-in, with OpenSlide's error."""
    import tilewise.openslide

    channels = _channels(world, np.uint16, 2, 256, 320)
    path = leica.write_scn(tmp_path / "f.scn", world, mains=[], fluorescence=[((0, 0, 320, 256), channels, ["A", "B"])])
    with tilewise.open(path) as slide:
        assert [s.name for s in slide.scenes] == ["fluorescence0"]
        np.testing.assert_array_equal(slide.read_region((0, 0), (320, 256), c=1)[..., 0], channels[1])
    with pytest.raises(openslide.OpenSlideError) as want:
        openslide.OpenSlide(str(path))
    with pytest.raises(tilewise.openslide.OpenSlideError) as got:
        tilewise.openslide.OpenSlide(str(path))
    assert type(got.value).__name__ == type(want.value).__name__ and str(got.value) == str(want.value)
