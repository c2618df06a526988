"""Associated images through tilewise.convert: to Aperio SVS, checked by OpenSlide 4.0.1, cuCIM's CPU reader
and tifffile - the Aperio properties (vendor, mpp, objective power), every level's pixels, the thumbnail as
directory 1 and the label (LZW, exact) and macro carried over - and to DICOM WSI as LABEL and OVERVIEW
instances (dciodvfy, OpenSlide, wsidicom); and LZW tiles (TIFF compression 5) decoded exactly by tifffile."""

from __future__ import annotations

import cucim
import imagecodecs
import numpy as np
import openslide
import pydicom
import pytest
import tifffile
import wsidicom

import slidegen
import tilewise
import vendor_tiff
from test_convert import dciodvfy_errors, halvings, psnr


@pytest.fixture(scope="module")
def aperio(tmp_path_factory):
    """An Aperio slide (JPEG YCbCr tiles, mpp 0.499, AppMag 20, a barcode) with label, macro and thumbnail:
    (path, its level 0 and associated images as OpenSlide reads them)."""
    path = tmp_path_factory.mktemp("svs") / "source.svs"
    vendor_tiff.write_aperio(path, slidegen.tissue_image(1500, 1100, seed=13), codec="jpeg-ycbcr",
                             description_extra="|Barcode = S12-34567")
    with openslide.OpenSlide(str(path)) as o:
        level0 = np.asarray(o.read_region((0, 0), 0, o.dimensions).convert("RGB"))
        associated = {k: np.asarray(v.convert("RGB")) for k, v in o.associated_images.items()}
    return path, level0, associated


def test_openslide_reads_an_aperio_slide_with_its_levels_and_properties(tmp_path, aperio):
    path, level0, _ = aperio
    out = tmp_path / "out.svs"
    tilewise.convert(path, out, codec="none", tile_size=256)
    expected = halvings(level0, 256)
    with openslide.OpenSlide(str(out)) as o:
        assert o.properties["openslide.vendor"] == "aperio"
        assert o.properties["openslide.mpp-x"] == "0.499" and o.properties["openslide.objective-power"] == "20"
        assert o.level_dimensions == tuple((e.shape[1], e.shape[0]) for e in expected)
        for k, e in enumerate(expected):
            got = np.asarray(o.read_region((0, 0), k, o.level_dimensions[k]).convert("RGB"))
            np.testing.assert_array_equal(got, e, err_msg=f"level {k}")
    with tifffile.TiffFile(out) as tf:
        assert tf.is_svs
        assert tf.pages[0].description.startswith("Aperio Image Library (tilewise ")
        assert not tf.pages[1].is_tiled and tf.pages[1].shape[:2] == expected[1].shape[:2]  # the thumbnail


def test_the_thumbnail_label_and_macro_read_alike_in_openslide_cucim_and_tilewise(tmp_path, aperio):
    path, level0, source = aperio
    out = tmp_path / "out.svs"
    tilewise.convert(path, out, tile_size=256)
    with openslide.OpenSlide(str(out)) as o:
        got = {k: np.asarray(v.convert("RGB")) for k, v in o.associated_images.items()}
    assert sorted(got) == ["label", "macro", "thumbnail"]
    np.testing.assert_array_equal(got["label"], source["label"])  # LZW: exact
    macro_reference = imagecodecs.jpeg8_decode(imagecodecs.jpeg8_encode(source["macro"], level=90, subsampling=(2, 2)))
    assert psnr(got["macro"], source["macro"]) > psnr(macro_reference, source["macro"]) - 0.5
    thumbnail_level = halvings(level0, 256)[1]  # 750 x 550: the first level within 1,024 pixels
    assert got["thumbnail"].shape == thumbnail_level.shape
    assert psnr(got["thumbnail"], thumbnail_level) > 30
    image = cucim.CuImage(str(out))
    assert set(image.associated_images) == {"label", "macro", "thumbnail"}
    for name in image.associated_images:
        np.testing.assert_array_equal(np.asarray(image.associated_image(name))[..., :3], got[name], err_msg=name)
    with tilewise.open(out) as s:
        assert s.format == "aperio" and s.mpp == pytest.approx((0.499, 0.499))
        for name, pixels in got.items():
            np.testing.assert_array_equal(np.asarray(s.associated_images[name])[..., :3], pixels, err_msg=name)


def test_a_dicom_series_keeps_the_label_and_macro_as_label_and_overview_instances(tmp_path, aperio):
    """LABEL and OVERVIEW instances validate, carry the source's barcode, and read alike in OpenSlide and
    wsidicom within JPEG's error of the source's images."""
    path, _, source = aperio
    out = tmp_path / "series"
    tilewise.convert(path, out, format="dicom", tile_size=256)
    names = sorted(p.name for p in out.iterdir())
    assert names == ["label.dcm", "level-0.dcm", "level-1.dcm", "level-2.dcm", "level-3.dcm", "overview.dcm"]
    for name in ("label.dcm", "overview.dcm"):
        assert dciodvfy_errors(out / name) == [], name
    label = pydicom.dcmread(out / "label.dcm", stop_before_pixels=True)
    assert list(label.ImageType)[2] == "LABEL" and label.BarcodeValue == "S12-34567" and label.SpecimenLabelInImage == "YES"
    with openslide.OpenSlide(str(out / "level-0.dcm")) as o:
        got = {k: np.asarray(v.convert("RGB")) for k, v in o.associated_images.items()}
    assert sorted(got) == ["label", "macro"]
    for name, pixels in got.items():
        reference = imagecodecs.jpeg8_decode(imagecodecs.jpeg8_encode(source[name], level=90, subsampling=(2, 2)))
        assert psnr(pixels, source[name]) > psnr(reference, source[name]) - 0.5, name
    with wsidicom.WsiDicom.open(out) as w:
        np.testing.assert_array_equal(np.asarray(w.read_label().convert("RGB")), got["label"])
        np.testing.assert_array_equal(np.asarray(w.read_overview().convert("RGB")), got["macro"])


def test_without_a_barcode_the_label_instance_still_validates(tmp_path):
    """No barcode in the source: Barcode Value is present and empty (Type 2), dciodvfy accepts it, wsidicom
    reads the label. (OpenSlide 4.0.1 leaves such a label out of its associated images.)"""
    path = tmp_path / "plain.svs"
    vendor_tiff.write_aperio(path, slidegen.tissue_image(600, 500, seed=3), codec="jpeg-ycbcr")
    out = tmp_path / "series"
    tilewise.convert(path, out, format="dicom", tile_size=256)
    assert dciodvfy_errors(out / "label.dcm") == []
    assert pydicom.dcmread(out / "label.dcm", stop_before_pixels=True).BarcodeValue == ""
    with wsidicom.WsiDicom.open(out) as w:
        assert w.read_label().size == (200, 160)


def test_an_svs_holds_rgb_only(tmp_path):
    src = tmp_path / "c.ome.tif"
    with tifffile.TiffWriter(src, ome=True) as tw:
        tw.write(np.zeros((2, 64, 64), np.uint16), metadata={"axes": "CYX"}, photometric="minisblack")
    with pytest.raises(tilewise.InvalidArgumentError, match="RGB"):
        tilewise.convert(src, tmp_path / "c.svs")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.ome.tif"]


@pytest.mark.parametrize("kind", ["zeros", "noise", "runs"])
def test_lzw_tiles_decode_exactly_in_tifffile(tmp_path, kind):
    """LZW across every code width and table reset: long zero runs (few codes), noise (the table fills and
    is cleared many times) and short runs of four values."""
    rng = np.random.default_rng(6)
    data = {"zeros": np.zeros((1000, 700), np.uint8),
            "noise": rng.integers(0, 256, (1000, 700), dtype=np.uint8),
            "runs": np.repeat(rng.integers(0, 4, 100_000, dtype=np.uint8), 7).reshape(1000, 700)}[kind]
    out = tmp_path / "lzw.ome.tif"
    tilewise.write_array(data, out, codec="lzw", tile_size=512)
    with tifffile.TiffFile(out) as tf:
        assert tf.pages[0].compression == 5
        np.testing.assert_array_equal(tf.series[0].levels[0].asarray().reshape(data.shape), data)
