"""Leica SCN: generated slides (tests/data/leica.py) against OpenSlide 4.0.1 - one or several main
images composited on the collection's canvas (overlapping, at offsets that are not whole pixels of the
smaller levels), both XML namespaces, focal planes, fluorescence images left out, the macro image - plus the
compatibility modules and damaged files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import leica
import slidegen
import tilewise
from test_formats import compare_with_openslide

openslide = pytest.importorskip("openslide")


@pytest.fixture(scope="module")
def world() -> np.ndarray:
    return slidegen.tissue_image(1600, 1200, seed=7)


VARIANTS = {
    "one-main-image": dict(mains=[(160, 96, 960, 704)]),
    "two-main-images": dict(mains=[(64, 64, 640, 512), (800, 480, 704, 640)]),
    "overlapping-main-images": dict(mains=[(64, 64, 640, 512), (512, 320, 704, 640)]),
    # Where they overlap the first image shows (OpenSlide paints in order and saturates).
    "overlapping-distinct-main-images": dict(mains=[(64, 64, 640, 512), (512, 320, 704, 640), (300, 200, 640, 512)],
                                             inverted=[1]),
    "overlapping-main-images-jpeg": dict(mains=[(64, 64, 640, 512), (512, 320, 704, 640)], compression="jpeg"),
    "namespace-2010-03-jpeg": dict(mains=[(160, 96, 960, 704)], namespace=leica.NS_2010_03, compression="jpeg"),
    "focal-planes": dict(mains=[(160, 96, 960, 704)], focal_planes=2),
    "fluorescence-image-left-out": dict(mains=[(64, 64, 640, 512), (800, 480, 704, 640)],
                                        illumination=["brightfield", "fluorescence"]),
    "no-macro": dict(mains=[(160, 96, 960, 704)], macro=False),
    "fractional-offsets": dict(mains=[(150, 90, 950, 701)]),
}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_leica_matches_openslide(tmp_path, world, variant):
    kw = VARIANTS[variant]
    path = leica.write_scn(tmp_path / "slide.scn", world, **kw)
    slide = compare_with_openslide(path, regions=25)
    theirs = dict(openslide.OpenSlide(str(path)).properties)
    assert dict(slide.properties) == theirs  # no key more, none less
    assert slide.format == "leica"
    assert slide.properties["leica.barcode"] == slide.properties["openslide.barcode"] == "TW-0042"
    assert slide.properties["openslide.objective-power"] == "20"
    assert set(slide.associated_images) == (set() if kw.get("macro") is False else {"macro"})


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


def test_compat_openslide_and_loader(tmp_path, world):
    import tilewise.openslide as tos

    path = leica.write_scn(tmp_path / "c.scn", world, mains=[(64, 64, 640, 512), (512, 320, 704, 640)])
    ours, theirs = tos.OpenSlide(str(path)), openslide.OpenSlide(str(path))
    assert tos.OpenSlide.detect_format(str(path)) == "leica"
    rng = np.random.default_rng(3)
    for level in range(theirs.level_count):
        w, h = theirs.level_dimensions[level]
        ds = int(theirs.level_downsamples[level])
        for _ in range(10):
            rw, rh = int(rng.integers(1, 300)), int(rng.integers(1, 300))
            x, y = int(rng.integers(-rw, w)) * ds, int(rng.integers(-rh, h)) * ds
            assert np.array_equal(np.asarray(ours.read_region((x, y), level, (rw, rh))),
                                  np.asarray(theirs.read_region((x, y), level, (rw, rh)))), (level, x, y, rw, rh)
    assert np.array_equal(np.asarray(ours.associated_images["macro"]), np.asarray(theirs.associated_images["macro"]))
    slide = tilewise.open(path)
    locations = [(int(x), int(y)) for x, y in rng.integers(-50, 1500, (24, 2))]
    got = np.concatenate(list(slide.read_regions(locations, (80, 64), batch_size=6, num_workers=2)))
    for i, loc in enumerate(locations):
        assert np.array_equal(got[i], slide.read_region(loc, (80, 64)))


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
