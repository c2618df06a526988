"""Every positioned-grid and database vendor format against OpenSlide 4.0.1, one suite: for each format's
generated variants (tests/data/<format>.py) the levels, pixels of random regions at every level, every
property (no key more, none less), the vendor's own facts and the associated images; then the OpenSlide
drop-in's RGBA regions and the batch loader on one slide of each. Vendor-specific behaviour (overlap order,
damage, remote reading, JPEG XR) stays in test_<format>.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pytest

import czi
import leica
import mirax
import sakura
import slidegen
import tilewise
import trestle
import ventana
from test_formats import compare_with_openslide

openslide = pytest.importorskip("openslide")


@dataclass
class Vendor:
    format: str
    suffix: str
    write: Callable  # write(path, world, **variant) -> path
    world: tuple  # tissue_image(width, height, seed)
    variants: dict
    facts: dict  # property -> value every variant has
    associated: Callable[[str], set]  # variant name -> associated image names
    defaults: dict = field(default_factory=dict)  # keywords every variant adds to its own
    compat: dict | None = None  # the variant of the drop-in and loader check (None: the format's own test)
    mpp: float | None = None


VENDORS = {
    "leica": Vendor(
        "leica", ".scn", leica.write_scn, (1600, 1200, 7),
        {
            "one-main-image": dict(mains=[(160, 96, 960, 704)]),
            "two-main-images": dict(mains=[(64, 64, 640, 512), (800, 480, 704, 640)]),
            "overlapping-main-images": dict(mains=[(64, 64, 640, 512), (512, 320, 704, 640)]),
            # Where they overlap the first image shows (OpenSlide paints in order and saturates).
            "overlapping-distinct-main-images": dict(
                mains=[(64, 64, 640, 512), (512, 320, 704, 640), (300, 200, 640, 512)], inverted=[1]),
            "overlapping-main-images-jpeg": dict(mains=[(64, 64, 640, 512), (512, 320, 704, 640)], compression="jpeg"),
            "namespace-2010-03-jpeg": dict(mains=[(160, 96, 960, 704)], namespace=leica.NS_2010_03, compression="jpeg"),
            "focal-planes": dict(mains=[(160, 96, 960, 704)], focal_planes=2),
            "fluorescence-image-left-out": dict(mains=[(64, 64, 640, 512), (800, 480, 704, 640)],
                                                illumination=["brightfield", "fluorescence"]),
            "no-macro": dict(mains=[(160, 96, 960, 704)], macro=False),
            "fractional-offsets": dict(mains=[(150, 90, 950, 701)]),
        },
        {"leica.barcode": "TW-0042", "openslide.barcode": "TW-0042", "openslide.objective-power": "20"},
        lambda v: set() if v == "no-macro" else {"macro"},
        compat=dict(mains=[(64, 64, 640, 512), (512, 320, 704, 640)])),
    "ventana": Vendor(
        "ventana", ".bif", ventana.write_bif, (1600, 1200, 8),
        {
            "one-area": dict(areas=[(40, 36, 6, 4)]),
            "two-areas": dict(areas=[(40, 36, 4, 3), (800, 480, 5, 4)]),
            "metadata-root-label-image": dict(areas=[(40, 36, 6, 4)], root="Metadata", macro_name="Label Image"),
            "jpeg": dict(areas=[(40, 36, 6, 4)], compression="jpeg"),
            "tinted-overlaps": dict(areas=[(40, 36, 6, 4)], tint=30),
            "ventana-tiff": dict(areas=[(40, 36, 6, 4)], bif=False),
        },
        {"ventana.UnitNumber": "BI10N0123", "openslide.objective-power": "40"},
        lambda v: {"macro", "thumbnail"}, mpp=0.2325,
        compat=dict(areas=[(40, 36, 4, 3), (800, 480, 5, 4)], tint=20)),
    "trestle": Vendor(
        "trestle", ".tif", trestle.write_trestle, (1200, 900, 9),
        {
            "jpeg": dict(),
            "lossless-tinted": dict(compression="zlib", tint=25),
            "no-overlap": dict(overlaps=((0, 0), (0, 0), (0, 0))),
            "fewer-overlaps-than-levels": dict(overlaps=((16, 8), (8, 4))),
            "odd-fields": dict(extra="Novalue;Key With Space = v ;=x"),
            "no-macro": dict(macro=False),
        },
        {"openslide.objective-power": "20"},
        lambda v: set() if v == "no-macro" else {"macro"}),
    "mirax": Vendor(
        "mirax", ".mrxs", mirax.write_mirax, (1200, 900, 4),
        {
            "jpeg-vimslide": dict(),
            "jpeg-stitching": dict(positions="stitching"),
            "jpeg-nominal-overlap": dict(positions=None, overlap=(16, 8)),
            "png-tinted-jitter": dict(fmt="PNG", tint=20, jitter=3, seed=5),
            "bmp-absent-photo": dict(fmt="BMP24", absent=[(1, 1)]),
            "one-image-per-photo": dict(divisions=1, overlap=(12, 12), levels=3),
            "no-overlap-no-positions": dict(divisions=1, overlap=(0, 0), positions=None),
            "four-divisions-subtiles": dict(divisions=4, tile=64, levels=5, fmt="PNG", jitter=1, seed=3),
            "empty-first-row": dict(absent=[(0, 0), (1, 0), (2, 0)], fmt="PNG"),
        },
        {"mirax.GENERAL.SLIDE_NAME": "tilewise test", "openslide.objective-power": "20"},
        lambda v: {"macro", "label", "thumbnail"}, defaults=dict(tile=128, overlap=(16, 12))),
    "sakura": Vendor(
        "sakura", ".svslide", sakura.write_svslide, (700, 500, 3),
        {
            "plain": dict(),
            "absent-tiles-and-channels": dict(missing=[(0, 1, 1), (1, 0, 1)],
                                              missing_channel=[(0, 2, 0, 2), (2, 0, 0, 0)]),
            "three-focal-planes": dict(focal_planes=3),
            "no-associated-images": dict(associated=False),
            "tile-256-levels-4": dict(tile=256, levels=4),
        },
        {"sakura.SlideId": "SL-0007"},
        lambda v: set() if v == "no-associated-images" else {"label", "macro", "thumbnail"}, mpp=0.25,
        compat=dict(missing=[(0, 1, 1)])),
    "zeiss": Vendor(
        "zeiss", ".czi", czi.write_czi, (1200, 900, 11),
        {
            "uncompressed": dict(),
            "zstd-v0": dict(compression=5),
            "zstd-v1": dict(compression=6),
            "zstd-v1-hilo-bgr48": dict(compression=6, hilo=True, pixel="bgr48"),
            "bgr48": dict(pixel="bgr48"),
            "overlapping-tiles": dict(overlap=(16, 8), tint=30),
            "overlapping-tiles-reversed-mosaic-order": dict(overlap=(16, 8), tint=30, reverse_m=True),
            "two-scenes": dict(scenes=((0, 0, 3, 2), (500, 400, 4, 3))),
            "edge-tiles": dict(tile=120),
        },
        {"zeiss.Information.Instrument.Microscopes.Microscope:1.Name": "Axioscan 7",
         "openslide.objective-power": "20"},
        lambda v: {"label", "macro"}, mpp=0.22,
        compat=dict(overlap=(16, 8), tint=20, scenes=((0, 0, 3, 2), (500, 400, 4, 3)))),
}

CASES = [(name, variant) for name, vendor in VENDORS.items() for variant in vendor.variants]


@pytest.fixture(scope="module")
def worlds():
    made = {}

    def world(vendor: Vendor) -> np.ndarray:
        if vendor.world not in made:
            w, h, seed = vendor.world
            made[vendor.world] = slidegen.tissue_image(w, h, seed=seed)
        return made[vendor.world]

    return world


def _write(tmp_path, worlds, name: str, kw: dict):
    vendor = VENDORS[name]
    return vendor.write(tmp_path / f"slide{vendor.suffix}", worlds(vendor), **{**vendor.defaults, **kw})


@pytest.mark.parametrize("name,variant", CASES, ids=[f"{n}-{v}" for n, v in CASES])
def test_matches_openslide(tmp_path, worlds, name, variant):
    vendor = VENDORS[name]
    path = _write(tmp_path, worlds, name, vendor.variants[variant])
    slide = compare_with_openslide(path, regions=25)
    assert dict(slide.properties) == dict(openslide.OpenSlide(str(path)).properties)  # no key more, none less
    assert slide.format == vendor.format
    for key, value in vendor.facts.items():
        assert slide.properties[key] == value, key
    if vendor.mpp is not None:
        assert slide.mpp == pytest.approx((vendor.mpp, vendor.mpp))
    assert set(slide.associated_images) == vendor.associated(variant)


COMPAT = [name for name, vendor in VENDORS.items() if vendor.compat is not None]


@pytest.mark.parametrize("name", COMPAT)
def test_openslide_drop_in_and_loader(tmp_path, worlds, name):
    """tilewise.openslide's RGBA regions (random sizes, also past the edges) and associated images equal
    OpenSlide's at every level; the batch loader's patches equal single reads."""
    import tilewise.openslide as tos

    path = _write(tmp_path, worlds, name, VENDORS[name].compat)
    ours, theirs = tos.OpenSlide(str(path)), openslide.OpenSlide(str(path))
    assert tos.OpenSlide.detect_format(str(path)) == openslide.OpenSlide.detect_format(str(path))
    rng = np.random.default_rng(3)
    for level in range(theirs.level_count):
        w, h = theirs.level_dimensions[level]
        ds = int(theirs.level_downsamples[level])
        for _ in range(10):
            rw, rh = int(rng.integers(1, 300)), int(rng.integers(1, 300))
            x, y = int(rng.integers(-rw, w)) * ds, int(rng.integers(-rh, h)) * ds
            assert np.array_equal(np.asarray(ours.read_region((x, y), level, (rw, rh))),
                                  np.asarray(theirs.read_region((x, y), level, (rw, rh)))), (level, x, y, rw, rh)
    for image in theirs.associated_images:
        assert np.array_equal(np.asarray(ours.associated_images[image]), np.asarray(theirs.associated_images[image]))
    slide = tilewise.open(path)
    w, h = slide.dimensions
    locations = [(int(x), int(y)) for x, y in zip(rng.integers(-50, w, 24), rng.integers(-50, h, 24))]
    for level in sorted({0, slide.level_count - 1}):
        got = np.concatenate(list(slide.read_regions(locations, (80, 64), level=level, batch_size=6, num_workers=2)))
        for i, loc in enumerate(locations):
            assert np.array_equal(got[i], slide.read_region(loc, (80, 64), level=level)), (level, loc)
