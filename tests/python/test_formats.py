"""Vendor formats: Aperio SVS, Philips TIFF and OME-TIFF, against OpenSlide (Aperio, Philips) and tifffile."""

from __future__ import annotations

import numpy as np
import pytest
import tifffile

import slidegen
import tilewise
import vendor_tiff
from conftest import assert_same, shared_file

openslide = pytest.importorskip("openslide")


def assert_close(actual, expected, tolerance, what):
    assert actual.shape == expected.shape, what
    diff = np.abs(actual.astype(int) - expected.astype(int))
    assert diff.max() <= tolerance, f"{what}: max difference {diff.max()} > {tolerance}"


def compare_with_openslide(path, tolerance=0, regions=20, seed=0):
    """Levels, downsamples, properties, associated images and pixels equal to OpenSlide's."""
    slide, osr = tilewise.open(path), openslide.OpenSlide(str(path))
    assert [lv.dimensions for lv in slide.levels] == list(osr.level_dimensions)
    assert [lv.downsample for lv in slide.levels] == list(osr.level_downsamples)
    ours = dict(slide.properties)
    for key, value in osr.properties.items():
        assert ours.get(key) == value, f"property {key}: {ours.get(key)!r} != {value!r}"
    assert set(slide.associated_images) == set(osr.associated_images)
    for name, image in osr.associated_images.items():
        mine = slide.associated_images[name]
        assert (mine.shape[1], mine.shape[0]) == image.size, name
        assert_close(mine, np.asarray(image.convert("RGB")), tolerance, f"associated image {name}")
    rng = np.random.default_rng(seed)
    for level, lv in enumerate(slide.levels):
        w, h = lv.dimensions
        cases = [(0, 0, w, h)]
        ds = lv.downsample
        if ds == int(ds):  # OpenSlide resamples at fractional level coordinates; compare on the level grid
            for _ in range(regions):
                rw, rh = int(rng.integers(1, 300)), int(rng.integers(1, 300))
                cases.append((int(rng.integers(-rw // 2, w)), int(rng.integers(-rh // 2, h)), rw, rh))
        for x, y, rw, rh in cases:
            x0, y0 = int(x * ds), int(y * ds)
            mine = slide.read_region((x0, y0), (rw, rh), level=level)
            theirs = np.asarray(osr.read_region((x0, y0), level, (rw, rh)))
            painted = theirs[..., 3] == 255
            what = f"{path.name} level {level} ({x0},{y0}) {rw}x{rh}"
            assert_close(np.where(painted[..., None], mine, 0), np.where(painted[..., None], theirs[..., :3], 0),
                         tolerance, what)
            assert (mine[~painted] == 255).all(), what
    return slide


@pytest.mark.parametrize("codec,tolerance", [("jpeg-rgb", 0), ("jpeg-ycbcr", 0), ("j2k-ycbcr", 1), ("j2k-rgb", 1)])
def test_aperio_matches_openslide(tmp_path, codec, tolerance):
    path = tmp_path / f"aperio-{codec}.svs"
    vendor_tiff.write_aperio(path, slidegen.tissue_image(1100, 800, seed=2), codec=codec)
    slide = compare_with_openslide(path, tolerance)
    assert slide.format == "aperio"
    assert slide.properties["aperio.AppMag"] == "20"
    assert slide.properties["openslide.objective-power"] == "20"
    assert slide.mpp == pytest.approx((0.499, 0.499))
    assert slide.levels[0].compression == ("jpeg2000" if codec.startswith("j2k") else "jpeg")
    assert set(slide.associated_images) == {"thumbnail", "label", "macro"}


def test_aperio_zero_length_tiles_read_as_background(tmp_path):
    path = tmp_path / "gaps.svs"
    written = vendor_tiff.write_aperio(path, slidegen.tissue_image(960, 480, seed=3), codec="jpeg-rgb", zero_tiles=[1])
    slide = tilewise.open(path)
    region = slide.read_region((0, 0), (960, 480))
    assert (region[0:240, 240:480] == 255).all()  # tile (1, 0) has no data
    assert not (region[0:240, 0:240] == 255).all()


def test_aperio_fixtures(tmp_path):
    compare_with_openslide(shared_file("openslide-python/small.svs"))


@pytest.mark.parametrize("label_in_xml", [True, False], ids=["label-in-xml", "label-directory"])
def test_philips_matches_openslide(tmp_path, label_in_xml):
    path = tmp_path / "philips.tiff"
    vendor_tiff.write_philips(path, slidegen.tissue_image(1000, 700, seed=4), label_in_xml=label_in_xml,
                              sparse_tiles=[1, 5])
    slide = compare_with_openslide(path)
    assert slide.format == "philips"
    assert slide.properties["openslide.barcode"] == "TW-0001"
    assert slide.mpp == pytest.approx((0.227, 0.227))
    assert "tiff.ImageDescription" not in slide.properties
    assert slide.properties["philips.PIIM_PIXEL_DATA_REPRESENTATION_SEQUENCE[1].PIIM_PIXEL_DATA_REPRESENTATION_NUMBER"] == "1"
    sparse = slide.read_region((256, 0), (256, 256))
    assert (sparse == 255).all()


def test_philips_with_malformed_xml_opens_as_generic_with_a_warning(tmp_path):
    path = tmp_path / "broken.tiff"
    vendor_tiff.write_philips(path, slidegen.tissue_image(600, 500, seed=5))
    data = bytearray(path.read_bytes())
    i = data.find(b"</DataObject></Array>")
    data[i : i + 3] = b"<<<"
    path.write_bytes(bytes(data))
    slide = tilewise.open(path)
    assert slide.format == "generic-tiff"
    assert any("could not be parsed" in w for w in slide.warnings)
    assert slide.read_region((0, 0), (100, 100)).shape == (100, 100, 3)


def write_ome(path, image, *, levels=3, compression="jpeg", metadata=None, photometric="rgb"):
    images = slidegen.pyramid(image, levels)
    meta = {"axes": "YXS" if image.ndim == 3 else "YX", "PhysicalSizeX": 0.25, "PhysicalSizeY": 0.26, "Name": "slide"}
    meta.update(metadata or {})
    opts = dict(tile=(128, 128), compression=compression, photometric=photometric)
    with tifffile.TiffWriter(path, ome=True) as tw:
        tw.write(images[0], subifds=levels - 1, metadata=meta, **opts)
        for im in images[1:]:
            tw.write(im, subfiletype=1, **opts)
    return images


@pytest.mark.parametrize("compression", ["jpeg", "zstd"])
def test_ome_tiff_rgb_pyramid(tmp_path, compression):
    path = tmp_path / "slide.ome.tif"
    write_ome(path, slidegen.tissue_image(900, 600, seed=6), compression=compression)
    slide = tilewise.open(path)
    assert slide.format == "ome-tiff"
    assert slide.mpp == pytest.approx((0.25, 0.26))
    assert slide.properties["ome.Pixels.SizeC"] == "3"
    assert slide.properties["ome.Image.Name"] == "slide"
    with tifffile.TiffFile(path) as tf:
        decoded = [tf.series[0].levels[i].asarray() for i in range(3)]
    for level, want in enumerate(decoded):
        h, w = want.shape[:2]
        assert_same(slide.read_region((0, 0), (w, h), level=level), want, f"level {level}")


def test_ome_tiff_16_bit_grey_renders_as_its_high_byte(tmp_path):
    path = tmp_path / "grey16.ome.tif"
    rng = np.random.default_rng(1)
    image = rng.integers(0, 65536, (300, 400), dtype=np.uint16)
    write_ome(path, image, levels=2, compression="deflate", photometric="minisblack")
    slide = tilewise.open(path)
    got = slide.read_region((0, 0), (400, 300), c="rgb")
    assert_same(got, np.repeat((image >> 8).astype(np.uint8)[..., None], 3, axis=2), "16-bit level 0")


def test_non_utf8_and_huge_descriptions_degrade_gracefully(tmp_path):
    path = tmp_path / "latin1.tif"
    image = slidegen.tissue_image(300, 200, seed=8)
    description = "caf\xe9 \xb5m " + "x" * (4 << 20)  # latin-1 bytes, 4 MiB
    tifffile.imwrite(path, image, tile=(64, 64), compression="deflate", description=description.encode("latin-1"),
                     metadata=None)
    slide = tilewise.open(path)
    value = slide.properties["tiff.ImageDescription"]
    assert value.startswith("caf\\xe9 \\xb5m") and len(value) > 4 << 20
    assert slide.read_region((0, 0), (10, 10)).shape == (10, 10, 3)


def test_jpeg2000_tiles_are_decoded_once_for_random_patches(tmp_path):
    """A JPEG 2000 window costs about as much as its whole tile, so J2K tiles enter the cache on first use:
    random overlapping patches decode each tile once (they used to decode a tile touched twice twice)."""
    path = tmp_path / "j2k.svs"
    vendor_tiff.write_aperio(path, slidegen.tissue_image(1200, 960, seed=4), codec="j2k-ycbcr", downsamples=())
    slide = tilewise.open(path)
    rng = np.random.default_rng(5)
    locs = [(int(x), int(y)) for x, y in zip(rng.integers(0, 1200 - 100, 300), rng.integers(0, 960 - 100, 300))]
    touched = {(tx, ty) for x, y in locs for tx in range(x // 240, (x + 99) // 240 + 1)
               for ty in range(y // 240, (y + 99) // 240 + 1)}
    # The cache is process-wide: a test that used tilewise.cucim before this one has turned it off (cuCIM
    # starts without a cache), so this test sets the capacity it needs.
    before = tilewise.cache_capacity()
    tilewise.set_cache_capacity(256 << 20)
    try:
        tilewise.clear_cache()
        tilewise.reset_cache_stats()
        reference = [slide.read_region(loc, (100, 100), use_cache=False) for loc in locs]
        for loc, expected in zip(locs, reference):
            assert_same(slide.read_region(loc, (100, 100)), expected)
        stats = tilewise.cache_stats()
    finally:
        tilewise.set_cache_capacity(before)
    assert stats["misses"] == len(touched), stats  # each tile decoded once, then served from the cache
    assert stats["hits"] > 0


def test_grey_alpha_jpeg_tiles_read_as_openslide_reads_them(tmp_path):
    """Two-component (grey + alpha) JPEG tiles, seen in real files: the grey component, as OpenSlide's."""
    openslide = pytest.importorskip("openslide")
    grey = slidegen.tissue_image(512, 384, seed=6)[..., 0]
    path = tmp_path / "grey_alpha.tif"
    tifffile.imwrite(path, np.dstack([grey, np.full_like(grey, 255)]), tile=(256, 256), compression="jpeg",
                     photometric="minisblack", extrasamples=[2])
    ours, theirs = tilewise.open(path), openslide.OpenSlide(str(path))
    for loc, size in [((0, 0), (512, 384)), ((37, 91), (100, 77)), ((250, 250), (20, 20))]:
        expected = np.asarray(theirs.read_region(loc, 0, size))[..., :3]
        assert_same(ours.read_region(loc, size, use_cache=False), expected)
        assert_same(ours.read_region(loc, size), expected)
