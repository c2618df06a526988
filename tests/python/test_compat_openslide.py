"""tilewise.openslide behaves like openslide-python (the real package is the oracle)."""

from __future__ import annotations

import pickle
from ctypes import ArgumentError

import numpy as np
import pytest
from PIL import Image

import slidegen
import tilewise
import tilewise.openslide as tos
import vendor_tiff
from conftest import shared_file
from tilewise.openslide.deepzoom import DeepZoomGenerator

openslide = pytest.importorskip("openslide")
from openslide.deepzoom import DeepZoomGenerator as RealDeepZoom  # noqa: E402


@pytest.fixture(scope="module")
def slides(tmp_path_factory):
    d = tmp_path_factory.mktemp("compat")
    vips = d / "vips.tif"
    slidegen.write_vips_pyramid(vips, slidegen.tissue_image(1500, 1100, seed=12))
    svs = d / "aperio.svs"
    vendor_tiff.write_aperio(svs, slidegen.tissue_image(1000, 800, seed=13), codec="jpeg-ycbcr")
    return [vips, svs]


def test_metadata_matches(slides):
    for path in slides + [shared_file("openslide-python/boxes.tiff"), shared_file("openslide-python/small.svs")]:
        ours, theirs = tos.OpenSlide(path), openslide.OpenSlide(str(path))
        assert ours.level_count == theirs.level_count
        assert ours.dimensions == theirs.dimensions
        assert ours.level_dimensions == theirs.level_dimensions
        assert ours.level_downsamples == theirs.level_downsamples
        assert dict(ours.properties) == dict(theirs.properties)
        assert set(ours.associated_images) == set(theirs.associated_images)
        for name, image in theirs.associated_images.items():
            mine = ours.associated_images[name]
            assert mine.mode == image.mode == "RGBA" and mine.size == image.size
            assert np.array_equal(np.asarray(mine), np.asarray(image))
        for d in (0.5, 1, 2, 3, 4.5, 16, 100):
            assert ours.get_best_level_for_downsample(d) == theirs.get_best_level_for_downsample(d)
        assert (ours.color_profile is None) == (theirs.color_profile is None)
        assert tos.OpenSlide.detect_format(path) == openslide.OpenSlide.detect_format(str(path))


def test_read_region_rgba_transparent_outside(slides):
    for path in slides:
        ours, theirs = tos.OpenSlide(path), openslide.OpenSlide(str(path))
        for level in range(ours.level_count):
            ds = int(ours.level_downsamples[level])
            if ds != ours.level_downsamples[level]:
                continue  # OpenSlide resamples at fractional level coordinates (see the module notes)
            for x, y, w, h in [(0, 0, 300, 200), (-40, -30, 100, 90), (700, 500, 900, 700), (5, 7, 1, 1)]:
                a = ours.read_region((x * ds, y * ds), level, (w, h))
                b = theirs.read_region((x * ds, y * ds), level, (w, h))
                assert a.mode == b.mode == "RGBA" and a.size == b.size
                assert np.array_equal(np.asarray(a), np.asarray(b)), (path.name, level, x, y)
    osr = tos.OpenSlide(slides[0])
    assert np.asarray(osr.read_region((0, 0), 9, (10, 10))).max() == 0  # invalid level: transparent
    assert osr.read_region((0, 0), 0, (400, 0)).size == (400, 0)
    with pytest.raises(tos.OpenSlideError, match="negative"):
        osr.read_region((0, 0), 0, (10, -5))


def on_level_grid(osr, location, level) -> bool:
    """True when the level-0 location maps to whole pixels of the level (where OpenSlide does not resample)."""
    return all((v / osr.level_downsamples[level]).is_integer() for v in location)


def test_thumbnails_and_deepzoom_match(slides):
    for path in slides + [shared_file("openslide-python/boxes.tiff")]:
        ours, theirs = tos.OpenSlide(path), openslide.OpenSlide(str(path))
        assert np.array_equal(np.asarray(ours.get_thumbnail((200, 200))), np.asarray(theirs.get_thumbnail((200, 200))))
        for kwargs in ({}, {"tile_size": 128, "overlap": 2}, {"limit_bounds": True}):
            a, b = DeepZoomGenerator(ours, **kwargs), RealDeepZoom(theirs, **kwargs)
            assert a.level_count == b.level_count and a.tile_count == b.tile_count
            assert a.level_tiles == b.level_tiles and a.level_dimensions == b.level_dimensions
            assert a.get_dzi("jpeg") == b.get_dzi("jpeg")
            for level in range(a.level_count):
                cols, rows = a.level_tiles[level]
                for address in {(0, 0), (cols - 1, rows - 1), (cols // 2, rows // 2)}:
                    assert a.get_tile_coordinates(level, address) == b.get_tile_coordinates(level, address)
                    assert a.get_tile_dimensions(level, address) == b.get_tile_dimensions(level, address)
                    ta, tb = a.get_tile(level, address), b.get_tile(level, address)
                    assert ta.size == tb.size
                    if on_level_grid(theirs, *b.get_tile_coordinates(level, address)[:2]):
                        assert np.array_equal(np.asarray(ta), np.asarray(tb)), (path.name, level, address)
            with pytest.raises(ValueError):
                a.get_tile(a.level_count, (0, 0))
            with pytest.raises(ValueError):
                a.get_tile(0, (5, 5))


def test_errors_and_handles_like_openslide_python(tmp_path):
    with pytest.raises(tos.OpenSlideUnsupportedFormatError):
        tos.OpenSlide(tmp_path / "missing.svs")
    (tmp_path / "text.txt").write_text("not a slide")
    with pytest.raises(tos.OpenSlideUnsupportedFormatError):
        tos.OpenSlide(tmp_path / "text.txt")
    assert tos.OpenSlide.detect_format(tmp_path / "text.txt") is None
    with pytest.raises(tos.OpenSlideError) as e:
        tos.OpenSlide(shared_file("openslide-python/unopenable.tiff"))
    assert not isinstance(e.value, tos.OpenSlideUnsupportedFormatError)
    osr = tos.OpenSlide(shared_file("openslide-python/boxes.tiff"))
    props, associated = osr.properties, osr.associated_images
    with osr:
        assert osr.level_count == 4
    for call in (lambda: osr.level_count, lambda: osr.read_region((0, 0), 0, (1, 1)), lambda: props["openslide.vendor"],
                 lambda: associated["label"], osr.close):
        with pytest.raises(ArgumentError):
            call()
    bad = tos.OpenSlide(shared_file("openslide-python/unreadable.svs"))
    assert bad.properties["openslide.vendor"] == "aperio"
    with pytest.raises(tos.OpenSlideError):
        bad.read_region((0, 0), 0, (16, 16))
    with pytest.raises(tos.OpenSlideError):  # errors are sticky, as in OpenSlide
        bad.properties["openslide.vendor"]


def test_image_slide_open_slide_cache_and_pickle(tmp_path, slides):
    png = tmp_path / "plain.png"
    Image.fromarray(slidegen.tissue_image(120, 80, seed=1)).save(png)
    image_slide = tos.open_slide(png)
    assert isinstance(image_slide, tos.ImageSlide)
    real = openslide.open_slide(str(png))
    assert image_slide.dimensions == real.dimensions and image_slide.level_count == 1
    for args in (((0, 0), 0, (120, 80)), ((-10, -10), 0, (50, 50)), ((100, 70), 0, (40, 40))):
        assert np.array_equal(np.asarray(image_slide.read_region(*args)), np.asarray(real.read_region(*args)))
    assert isinstance(tos.open_slide(slides[0]), tos.OpenSlide)
    osr = tos.OpenSlide(slides[0])
    osr.set_cache(tos.OpenSlideCache(64 << 20))
    with pytest.raises(TypeError):
        osr.set_cache(64)
    clone = pickle.loads(pickle.dumps(osr))
    assert clone.dimensions == osr.dimensions
    assert all(hasattr(tos, name) for name in dir(openslide) if name.startswith("PROPERTY_NAME_"))


def _outcome(fn):
    """(exception type name, or 'ok', and the value's repr) of a call, to compare the two libraries."""
    try:
        return "ok", repr(fn())
    except BaseException as e:  # noqa: BLE001 - the exception type is what is compared
        return type(e).__name__, ""


def test_arguments_and_handles_behave_as_openslide_python():
    from pathlib import Path

    boxes = str(shared_file("openslide-python/boxes.tiff"))
    for mod in (tos, openslide):
        assert _outcome(lambda: mod.OpenSlide(None))[0] == "ArgumentError"
        assert _outcome(lambda: mod.OpenSlide.detect_format(None))[0] == "ArgumentError"
        assert _outcome(lambda: mod.OpenSlideCache(-1))[0] == "ArgumentError"
        assert _outcome(lambda: mod.OpenSlideCache("big"))[0] == "ArgumentError"
    assert repr(tos.OpenSlide(Path(boxes))) == repr(openslide.OpenSlide(Path(boxes)))
    assert repr(tos.OpenSlide(boxes.encode())) == repr(openslide.OpenSlide(boxes.encode()))
    assert tos.OpenSlide(boxes.encode()).dimensions == openslide.OpenSlide(boxes.encode()).dimensions
    png = str(shared_file("ihc.png"))
    for mod in (tos, openslide):
        image_slide = mod.ImageSlide(png)
        image_slide.close()
        assert _outcome(lambda: image_slide.dimensions)[0] == "ValueError"
        assert _outcome(lambda: image_slide.read_region((0, 0), 0, (1, 1)))[0] == "ValueError"
        assert _outcome(image_slide.close)[0] == "ok"
    assert tos.deepzoom.DeepZoomGenerator.BOUNDS_OFFSET_PROPS == RealDeepZoom.BOUNDS_OFFSET_PROPS
    assert tos.deepzoom.DeepZoomGenerator.BOUNDS_SIZE_PROPS == RealDeepZoom.BOUNDS_SIZE_PROPS


def test_lowlevel_has_openslide_pythons_functions_and_errors():
    import ctypes

    import openslide.lowlevel as real
    import tilewise.openslide.lowlevel as ours

    def functions(mod):
        return {n for n in dir(mod) if not n.startswith("_") and not n[0].isupper() and callable(getattr(mod, n))
                and not hasattr(ctypes, n) and getattr(getattr(mod, n), "__module__", "") == mod.__name__}

    assert functions(real) <= functions(ours), functions(real) - functions(ours)
    assert all(getattr(ours, n).available for n in functions(ours))
    assert issubclass(ours.OpenSlideUnsupportedFormatError, ours.OpenSlideError)
    assert tos.OpenSlideError is ours.OpenSlideError
    boxes = str(shared_file("openslide-python/boxes.tiff"))
    ours_h, real_h = ours.open(boxes), real.open(boxes)
    for fn, args in (("get_level_count", ()), ("get_level_dimensions", (1,)), ("get_level_downsample", (2,)),
                     ("get_best_level_for_downsample", (3.0,)), ("get_property_names", ()),
                     ("get_property_value", ("openslide.vendor",)), ("get_property_value", ("nope",)),
                     ("get_associated_image_names", ()), ("get_icc_profile_size", ()), ("get_error", ())):
        assert getattr(ours, fn)(ours_h, *args) == getattr(real, fn)(real_h, *args), fn
    assert ours.read_icc_profile(ours_h) == real.read_icc_profile(real_h)
    assert np.array_equal(np.asarray(ours.read_region(ours_h, 10, 20, 1, 30, 40)),
                          np.asarray(real.read_region(real_h, 10, 20, 1, 30, 40)))
    # An unreadable associated image raises OpenSlideError (openslide-python's), and the handle stays in error.
    bad = tos.OpenSlide(str(shared_file("openslide-python/unreadable.svs")))
    with pytest.raises(tos.lowlevel.OpenSlideError):
        bad.associated_images["thumbnail"]
    with pytest.raises(tos.OpenSlideError):
        bad.properties["openslide.vendor"]


def test_fractional_level_locations_are_resampled_as_openslide_does(tmp_path):
    """At levels > 0 a level-0 location rarely maps to a whole level pixel; OpenSlide then interpolates by
    the remainder (cairo/pixman bilinear). tilewise.openslide does the same: opaque pixels within 2 levels,
    alpha within 2 and premultiplied colour within 4 where OpenSlide's alpha is partial - the level's transparent
    fringe, and the seams between tiles, which OpenSlide paints one tile at a time (each interpolated against
    transparency past its edge, then saturated: alpha 254 there, which pixman's rounding leaves) (snapping to the grid,
    as the native API does, was up to ~100 off), whatever the signs of the coordinates (MONAI centres its
    patches, so a slide's border patches have one negative coordinate)."""
    path = tmp_path / "odd.tif"
    slidegen.write_vips_pyramid(path, slidegen.tissue_image(1001, 777, seed=5), tile=64)  # downsample 2.0023...
    ours, theirs = tos.OpenSlide(path), openslide.OpenSlide(str(path))
    rng = np.random.default_rng(7)
    checked = 0
    for level in range(1, theirs.level_count):
        ds = theirs.level_downsamples[level]
        lw, lh = theirs.level_dimensions[level]
        # Every combination of signs: a negative coordinate is cut off whole, the other axis keeps its fraction.
        fixed = [(122, -28, 256, 256), (-28, 122, 256, 256), (3, -1, 64, 64), (-3, -5, 40, 30), (-1, 77, 9, 9)]
        randoms = [(int(rng.integers(-300, int(lw * ds) + 40)), int(rng.integers(-300, int(lh * ds) + 40)),
                    int(rng.integers(1, 150)), int(rng.integers(1, 150))) for _ in range(40)]
        for x, y, w, h in fixed + randoms:
            a = np.asarray(theirs.read_region((x, y), level, (w, h))).astype(int)
            b = np.asarray(ours.read_region((x, y), level, (w, h))).astype(int)
            opaque = (a[..., 3] == 255) & (b[..., 3] == 255)
            assert np.abs(a - b)[opaque].max(initial=0) <= 2, (level, x, y, w, h)
            assert np.abs(a[..., 3] - b[..., 3]).max() <= 2, (level, x, y, w, h)
            premultiplied = np.abs(a[..., :3] * a[..., 3:] // 255 - b[..., :3] * b[..., 3:] // 255)
            assert premultiplied.max() <= 4, (level, x, y, w, h)
            checked += int(any(v >= 0 and v / ds != int(v / ds) for v in (x, y)))
    assert checked > 80  # most locations were fractional
    # DeepZoom tiles go through the same path: equal within the same bound.
    for dz_ours, dz_theirs in [(DeepZoomGenerator(ours), RealDeepZoom(theirs))]:
        for level in range(dz_theirs.level_count - 4, dz_theirs.level_count):
            cols, rows = dz_theirs.level_tiles[level]
            for address in [(0, 0), (cols - 1, rows - 1), (cols // 2, rows // 2)]:
                a = np.asarray(dz_theirs.get_tile(level, address)).astype(int)
                b = np.asarray(dz_ours.get_tile(level, address)).astype(int)
                assert a.shape == b.shape and np.abs(a - b).max() <= 3, (level, address)


def test_associated_images_in_openslides_order_with_their_icc_profiles(tmp_path):
    """OpenSlide lists associated images by name (label, macro, thumbnail; the file stores thumbnail, label,
    macro) - DeepZoom's index pages follow that order. An Aperio thumbnail whose description names the
    slide's "ICC Profile" carries the slide's profile (`info['icc_profile']`,
    `openslide.associated.thumbnail.icc-size`); label and macro carry none, nor does a thumbnail of another
    or no profile name."""
    from PIL import ImageCms

    icc = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()
    for extra, expected in (("|ICC Profile = ScanScope v1", {"thumbnail": icc}), ("", {})):
        path = tmp_path / f"icc{len(extra)}.svs"
        vendor_tiff.write_aperio(path, slidegen.tissue_image(600, 500, seed=4), icc=icc, description_extra=extra)
        ours, theirs = tos.OpenSlide(path), openslide.OpenSlide(str(path))
        assert list(ours.associated_images) == list(theirs.associated_images) == ["label", "macro", "thumbnail"]
        assert dict(ours.properties) == dict(theirs.properties)
        assert ("openslide.associated.thumbnail.icc-size" in ours.properties) == bool(expected)
        for name, image in theirs.associated_images.items():
            assert image.info.get("icc_profile") == expected.get(name), name
            assert ours.associated_images[name].info.get("icc_profile") == expected.get(name), name
        native = tilewise.open(path)
        assert list(native.associated_images) == ["label", "macro", "thumbnail"]
        assert native.associated_icc_profile("thumbnail") == expected.get("thumbnail")


@pytest.mark.parametrize("name", ["strips.tif", "strips.ome.tif"])
def test_stripped_tiffs_are_left_to_image_slide_as_openslide_leaves_them(tmp_path, name):
    """OpenSlide reads a generic TIFF (OME-TIFF too) only when it is tiled: open_slide() then falls back to
    ImageSlide. tilewise.open reads such files; its OpenSlide drop-in refuses them as OpenSlide does."""
    import tifffile

    path = tmp_path / name
    image = slidegen.tissue_image(300, 200, seed=1)
    tifffile.imwrite(path, image, photometric="rgb", rowsperstrip=16, metadata=None if "ome" not in name else {})
    assert openslide.OpenSlide.detect_format(str(path)) is None and tos.OpenSlide.detect_format(path) is None
    with pytest.raises(openslide.OpenSlideUnsupportedFormatError):
        openslide.OpenSlide(str(path))
    with pytest.raises(tos.OpenSlideUnsupportedFormatError):
        tos.OpenSlide(path)
    ours, theirs = tos.open_slide(path), openslide.open_slide(str(path))
    assert type(ours).__name__ == type(theirs).__name__ == "ImageSlide"
    assert np.array_equal(np.asarray(ours.read_region((10, 20), 0, (50, 40))),
                          np.asarray(theirs.read_region((10, 20), 0, (50, 40))))
    assert tilewise.open(path).dimensions == (300, 200)  # the native API reads it


@pytest.mark.parametrize("compression,extrasamples", [("zlib", "unassalpha"), ("lzw", "assocalpha"),
                                                      (None, "unassalpha")])
def test_rgba_tiffs_keep_their_alpha_as_openslide_does(tmp_path, compression, extrasamples):
    """The alpha of an RGBA TIFF (unassociated: premultiplied as libtiff's RGBA reader does it; associated:
    as stored) comes back as OpenSlide gives it, un-premultiplied as openslide-python does: every pixel
    equal at whole-pixel locations (never opaque where OpenSlide has alpha 0), and at fractional ones within
    the sub-pixel bounds; thumbnails follow."""
    image = slidegen.tissue_image(600, 500, seed=3)
    yy, xx = np.mgrid[:500, :600]
    alpha = np.clip((xx + yy) // 4, 0, 255).astype(np.uint8)
    alpha[100:200, 100:300] = 0
    colour = image if extrasamples == "unassalpha" else ((image.astype(int) * alpha[..., None] + 127) // 255)
    data = np.dstack([colour.astype(np.uint8), alpha])
    path = tmp_path / "rgba.tif"
    import tifffile

    with tifffile.TiffWriter(path) as tw:
        for level in (data, data[::2, ::2].copy()):
            tw.write(level, tile=(128, 128), photometric="rgb", compression=compression, extrasamples=[extrasamples],
                     metadata=None, subfiletype=0 if level is data else 1)
    ours, theirs = tos.OpenSlide(path), openslide.OpenSlide(str(path))
    for level, location, size in ((0, (0, 0), (600, 500)), (1, (0, 0), (300, 250)), (1, (-21, 50), (100, 100)),
                                  (0, (550, 450), (100, 100))):
        a, b = np.asarray(theirs.read_region(location, level, size)), np.asarray(ours.read_region(location, level, size))
        assert np.array_equal(a, b), (level, location)
    a = np.asarray(theirs.read_region((37, 91), 1, (200, 150))).astype(int)
    b = np.asarray(ours.read_region((37, 91), 1, (200, 150))).astype(int)
    assert np.abs(a[..., 3] - b[..., 3]).max() <= 2
    assert np.abs(a[..., :3] * a[..., 3:] // 255 - b[..., :3] * b[..., 3:] // 255).max() <= 4
    assert np.array_equal(np.asarray(ours.get_thumbnail((150, 150))), np.asarray(theirs.get_thumbnail((150, 150))))
    assert (np.asarray(ours.read_region((0, 0), 0, (600, 500)))[..., 3] == 0).sum() > 20000
