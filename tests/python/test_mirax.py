"""3DHISTECH MIRAX beyond the shared vendor suite (test_vendors.py: every variant against OpenSlide 4.0.1):
positions off the pixel grid of smaller levels, overlapping photos, the fill colour, the compatibility modules'
transparency, the batch loader and cuCIM, remote reading and damaged slides."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pytest

import mirax
import slidegen
import tilewise
from test_formats import compare_with_openslide

openslide = pytest.importorskip("openslide")


@pytest.fixture(scope="module")
def world() -> np.ndarray:
    return slidegen.tissue_image(1200, 900, seed=4)


def test_positions_off_the_pixel_grid_of_smaller_levels(tmp_path, world):
    """A photo step of 256 - 12 = 244 pixels lands on half pixels at 1/8 scale: OpenSlide paints such tiles
    at the fraction through cairo (bilinear), tilewise rounds them to the nearest pixel. Level 0 (whole
    positions) is byte-identical; the smaller levels keep OpenSlide's geometry and properties and differ
    only by that resampling (a mean of a few levels, no tile misplaced)."""
    path = mirax.write_mirax(tmp_path / "half.mrxs", world, tile=128, overlap=(16, 12), positions=None)
    slide, osr = tilewise.open(path), openslide.OpenSlide(str(path))
    assert [lv.dimensions for lv in slide.levels] == list(osr.level_dimensions)
    assert dict(osr.properties).items() <= dict(slide.properties).items()
    for level, (w, h) in enumerate(osr.level_dimensions):
        ours = slide.read_region((0, 0), (w, h), level=level).astype(int)
        theirs = np.asarray(osr.read_region((0, 0), level, (w, h)))[..., :3].astype(int)
        diff = np.abs(ours - theirs)
        if level < 3:
            assert diff.max() == 0, level
        else:
            assert diff.mean() < 4 and np.median(diff) <= 2, (level, diff.mean())


def test_overlaps_show_the_later_photo(tmp_path):
    """Where photos overlap, the one later in row-major order shows (OpenSlide 4.0.1's paint order), and
    each photo's own tint is visible: the test would fail with the other order."""
    flat = np.full((700, 900, 3), 100, np.uint8)
    path = mirax.write_mirax(tmp_path / "flat.mrxs", flat, tile=128, overlap=(32, 24), fmt="PNG", tint=20, jitter=0)
    slide = tilewise.open(path)
    row = slide.read_region((0, 10), (slide.levels[0].dimensions[0], 1))[0, :, 0]
    # photo (0, 0) is tinted -40, photo (1, 0) 0: the switch is where photo 1 starts (256 - 32), not where
    # photo 0 ends (256)
    assert row[223] == 60 and row[224] == 100 and row[255] == 100
    compare_with_openslide(path, regions=10)


def test_fill_colour_is_the_slide_background(tmp_path, world):
    path = mirax.write_mirax(tmp_path / "blue.mrxs", world, tile=128, fill_bgr=0xC08040, absent=[(0, 0)], fmt="PNG")
    slide, osr = tilewise.open(path), openslide.OpenSlide(str(path))
    assert slide.properties["openslide.background-color"] == osr.properties["openslide.background-color"] == "4080C0"
    assert slide.background == (0x40, 0x80, 0xC0)
    corner = slide.read_region((0, 0), (32, 32))  # photo (0, 0) is absent: nothing is stored there
    assert (corner == (0x40, 0x80, 0xC0)).all()
    assert slide.stored_area(0, (0, 0), (32, 32)) == []
    stored = slide.stored_area(0, (400, 300), (300, 200))
    assert sum(w * h for _, _, w, h in stored) == 300 * 200  # photos overlap there, in disjoint parts
    assert (np.asarray(osr.read_region((0, 0), 0, (32, 32)))[..., 3] == 0).all()


def test_compat_openslide_is_transparent_where_openslide_draws_nothing(tmp_path, world):
    """tilewise.openslide's RGBA equals OpenSlide's everywhere, including the gaps between photos and
    the tiles drawn past the level's edge."""
    import tilewise.openslide as tos

    path = mirax.write_mirax(tmp_path / "gaps.mrxs", world, tile=128, absent=[(1, 1), (0, 2)], fmt="PNG", jitter=3, seed=9)
    ours, theirs = tos.OpenSlide(str(path)), openslide.OpenSlide(str(path))
    assert ours.detect_format(str(path)) == "mirax"
    rng = np.random.default_rng(1)
    for level in range(theirs.level_count):
        w, h = theirs.level_dimensions[level]
        ds = int(theirs.level_downsamples[level])
        for _ in range(12):
            rw, rh = int(rng.integers(1, 300)), int(rng.integers(1, 300))
            x, y = int(rng.integers(-rw, w + 40)) * ds, int(rng.integers(-rh, h + 40)) * ds
            a = np.asarray(ours.read_region((x, y), level, (rw, rh)))
            b = np.asarray(theirs.read_region((x, y), level, (rw, rh)))
            assert np.array_equal(a, b), (level, x, y, rw, rh)
        assert (np.asarray(ours.read_region((0, 0), level, (w, h)))[..., 3] == 0).any()


def test_loader_regions_and_cucim(tmp_path, world):
    path = mirax.write_mirax(tmp_path / "load.mrxs", world, tile=128, fmt="PNG", jitter=2)
    slide = tilewise.open(path)
    locations = [(int(x), int(y)) for x, y in np.random.default_rng(2).integers(-64, 1000, (40, 2))]
    for level in (0, 1):
        got = np.concatenate(list(slide.read_regions(locations, (96, 80), level=level, batch_size=8, num_workers=2)))
        for i, loc in enumerate(locations):
            assert np.array_equal(got[i], slide.read_region(loc, (96, 80), level=level)), (level, loc)
    from tilewise.cucim import CuImage

    img = CuImage(str(path))
    assert img.resolutions["level_count"] == slide.level_count
    assert np.array_equal(np.asarray(img.read_region((100, 120), (64, 64), 0)), slide.read_region((100, 120), (64, 64)))


def _damage(tmp_path, world, name, how) -> Path:
    path = mirax.write_mirax(tmp_path / f"{name}.mrxs", world[:600, :700], tile=128, fmt="PNG")
    how(path.with_suffix(""))
    return path


def _edit_ini(folder: Path, old: str, new: str) -> None:
    ini = folder / "Slidedat.ini"
    ini.write_bytes(ini.read_bytes().replace(old.encode(), new.encode()))


def _set_key(folder: Path, key: str, value) -> None:
    ini = folder / "Slidedat.ini"
    text = ini.read_text(encoding="utf-8-sig")
    text = re.sub(rf"^{key} = (.*)$", lambda m: f"{key} = {value(m.group(1).strip())}", text, count=1, flags=re.M)
    ini.write_text(text, encoding="utf-8-sig")


DAMAGE = {
    "no-slidedat": lambda f: (f / "Slidedat.ini").unlink(),
    "no-index": lambda f: (f / "Index.dat").unlink(),
    "index-version": lambda f: (f / "Index.dat").write_bytes(b"09.99" + (f / "Index.dat").read_bytes()[5:]),
    "index-slide-id": lambda f: _edit_ini(f, "SLIDE_ID = ", "SLIDE_ID = x"),
    "index-truncated": lambda f: (f / "Index.dat").write_bytes((f / "Index.dat").read_bytes()[:60]),
    "zoom-level-not-first": lambda f: _edit_ini(f, "HIER_0_NAME = Slide zoom level", "HIER_0_NAME = Other"),
    "image-format": lambda f: _edit_ini(f, "IMAGE_FORMAT = PNG", "IMAGE_FORMAT = GIF"),
    "position-size": lambda f: _set_key(f, "IMAGENUMBER_X", lambda v: str(int(v) + 2)),
    "zero-images": lambda f: _set_key(f, "IMAGENUMBER_Y", lambda v: "0"),
    "positions-zlib": lambda f: _set_key(f, "NONHIER_1_NAME", lambda v: "StitchingIntensityLayer"),
    "associated-format": lambda f: _set_key(f, "THUMBNAIL_IMAGE_TYPE", lambda v: "PNG"),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_damaged_slides_fail_to_open_clearly(tmp_path, world, damage):
    path = _damage(tmp_path, world, damage, DAMAGE[damage])
    with pytest.raises(tilewise.TilewiseError) as e:
        tilewise.open(path)
    assert str(path) in str(e.value) and "mirax" in str(e.value)
    with pytest.raises(openslide.OpenSlideError):
        openslide.OpenSlide(str(path))


def test_a_missing_or_damaged_image_fails_only_its_reads(tmp_path, world):
    path = mirax.write_mirax(tmp_path / "img.mrxs", world[:600, :700], tile=128, fmt="PNG", data_files=1)
    data = path.with_suffix("") / "Data0000.dat"
    blob = bytearray(data.read_bytes())
    first = blob.index(b"\x89PNG")
    blob[first + 40:first + 200] = bytes(160)  # the first level-0 image's compressed data
    data.write_bytes(bytes(blob))
    slide = tilewise.open(path)
    with pytest.raises(tilewise.TilewiseError) as e:
        slide.read_region((0, 0), (64, 64))
    assert "Data0000.dat" in str(e.value) and "level 0 tile (0,0)" in str(e.value)
    slide.read_region((600, 400), (64, 64))  # another image reads


def test_mirax_over_http(tmp_path, world):
    """The .mrxs URL's folder (Slidedat.ini, the index, the data files) is fetched beside it."""
    servers = pytest.importorskip("servers")
    if shutil.which("nginx") is None and not Path("/usr/sbin/nginx").exists():
        pytest.skip("nginx is not installed")
    root = tmp_path / "www"
    path = mirax.write_mirax(root / "cohort" / "slide.mrxs", world[:600, :700], tile=128, fmt="PNG")
    (tmp_path / "nginx").mkdir()
    proc, url = servers.nginx(root, tmp_path / "nginx")
    try:
        local, remote = tilewise.open(path), tilewise.open(f"{url}/cohort/slide.mrxs")
        assert remote.format == "mirax" and remote.levels == local.levels
        assert dict(remote.properties) == dict(local.properties)
        for level in range(local.level_count):
            w, h = local.levels[level].dimensions
            assert np.array_equal(remote.read_region((0, 0), (w, h), level=level),
                                  local.read_region((0, 0), (w, h), level=level))
    finally:
        servers.stop(proc)
