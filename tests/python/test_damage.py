"""Damage and valid-but-unread files, as real ones arrive: what the pixels do not need is left out with a
warning (OpenSlide reads every pixel of these files), a format's own damage fails as that format instead of
falling through to a weaker one, what tilewise does not read is Unsupported (not Corrupt), and errors name
the file once and the instance that failed."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest
import tifffile

import czi
import dicom_wsi
import ndpi
import slidegen
import tilewise

openslide = pytest.importorskip("openslide")


def same_pixels_as_openslide(path) -> tilewise.Slide:
    slide, osr = tilewise.open(path), openslide.OpenSlide(str(path))
    assert slide.format == osr.properties["openslide.vendor"]
    assert [lv.dimensions for lv in slide.levels] == list(osr.level_dimensions)
    for level in range(slide.level_count):
        ours = slide.read_region((0, 0), slide.levels[level].dimensions, level=level)
        theirs = np.asarray(osr.read_region((0, 0), level, osr.level_dimensions[level]))[..., :3]
        assert np.array_equal(ours, theirs), level
    return slide


def test_a_tiff_cut_inside_an_icc_profile_it_does_not_need(tmp_path):
    """The profile is left out (OpenSlide has no openslide.icc-size then either), every pixel is read."""
    from PIL import ImageCms

    icc = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()
    path = tmp_path / "icc.tif"
    image = slidegen.tissue_image(600, 500, seed=3)
    with tifffile.TiffWriter(path) as tw:
        tw.write(image, tile=(128, 128), photometric="rgb", compression="jpeg", metadata=None, iccprofile=icc)
        tw.write(image[::2, ::2].copy(), tile=(128, 128), photometric="rgb", compression="jpeg", metadata=None,
                 subfiletype=1)
    with tifffile.TiffFile(path) as t:
        entry = t.pages[0].tags[34675].offset
    data = bytearray(path.read_bytes())
    data[entry + 8:entry + 12] = len(data).to_bytes(4, "little")  # the profile now starts at the file's end,
    data += icc[:100]                                                # which cuts it after 100 bytes
    path.write_bytes(data)
    slide = same_pixels_as_openslide(path)
    assert "openslide.icc-size" not in openslide.OpenSlide(str(path)).properties
    assert slide.icc_profile is None and "openslide.icc-size" not in slide.properties
    assert any("tag 34675" in w and "left out" in w for w in slide.warnings), slide.warnings


@pytest.mark.parametrize("cut", [1, 4])
def test_a_dicom_file_missing_its_last_bytes(tmp_path, cut):
    """The file ends inside the Sequence Delimitation Item after the last frame: nothing needed is missing."""
    first = dicom_wsi.write_series(tmp_path / "s", slidegen.tissue_image(600, 500, seed=3), levels=2)
    first.write_bytes(first.read_bytes()[:-cut])
    same_pixels_as_openslide(first)


def test_dicom_errors_name_the_file_once_and_the_instance_that_failed(tmp_path):
    first = dicom_wsi.write_series(tmp_path / "s", slidegen.tissue_image(600, 500, seed=3), levels=2)
    data = first.read_bytes()
    first.write_bytes(data[:-9])  # the last fragment cut
    with pytest.raises(tilewise.CorruptError) as e:
        tilewise.open(first)
    assert str(e.value).count(str(first)) == 1, e.value
    # A damaged instance of the series that is not the opened one is named as the one that failed.
    first.write_bytes(data)
    other = tmp_path / "s" / "slide-level1.dcm"
    other.write_bytes(other.read_bytes()[:-9])
    with pytest.raises(tilewise.CorruptError) as e:
        tilewise.open(first)
    assert str(e.value).startswith(f"{first}: dicom: {other}: "), e.value


def test_a_damaged_unused_ndpi_tag_keeps_the_slide_an_ndpi(tmp_path):
    """A flipped byte in the offset of a vendor tag nothing needs (the property map): OpenSlide still reads
    the NDPI with all its levels, and so does tilewise, saying what it left out - not a one-level generic
    TIFF without a word."""
    path = tmp_path / "s.ndpi"
    ndpi.write_ndpi(path, slidegen.tissue_image(1024, 768, seed=4), levels=3, subsampling="4:2:2",
                    properties="a=1\r\nb=2")
    data = bytearray(path.read_bytes())
    entry = data.find((ndpi.PROPERTY_MAP).to_bytes(2, "little") + (2).to_bytes(2, "little"))
    assert entry > 0
    data[entry + 11] ^= 0xFF  # the offset's high byte: the value now lies past the end of the file
    path.write_bytes(data)
    slide = same_pixels_as_openslide(path)
    assert slide.format == "hamamatsu" and slide.level_count > 1
    assert any("tag 65449" in w for w in slide.warnings), slide.warnings


def test_16_bit_samples_and_orientation_are_named_in_the_warnings(tmp_path):
    path = tmp_path / "deep.tif"
    image = (slidegen.tissue_image(300, 200, seed=2).astype(np.uint16) * 257) // 2
    tifffile.imwrite(path, image, photometric="rgb", tile=(64, 64), metadata=None)
    slide = tilewise.open(path)
    assert any("16-bit samples are read as their high byte" in w for w in slide.warnings), slide.warnings
    assert np.array_equal(slide.read_region((0, 0), (300, 200)), (image >> 8).astype(np.uint8))
    path = tmp_path / "turned.tif"
    tifffile.imwrite(path, image.astype(np.uint8), photometric="rgb", tile=(64, 64), metadata=None,
                     extratags=[(274, "H", 1, 8, True)])
    slide = tilewise.open(path)
    assert any("Orientation 8 is not applied" in w for w in slide.warnings), slide.warnings
    plain = tmp_path / "plain.tif"
    tifffile.imwrite(plain, image.astype(np.uint8), photometric="rgb", tile=(64, 64), metadata=None)
    assert tilewise.open(plain).warnings == ()


@pytest.mark.parametrize("dimension,start,outcome", [
    ("C", 1, "2 channels of BGR24 samples .several colour channels. are not read"),
    ("R", 1, "subblock dimension R at index 1 .images beyond channels, focal planes and time points. is not read"),
    ("B", 0, (1, 3, 1)), ("Z", 0, (1, 3, 1)), ("T", 2, (2, 3, 1))])
def test_czi_dimensions_read_or_refused_as_unsupported(tmp_path, dimension, start, outcome):
    """The first subblock's channel dimension edited: another BGR channel or a rotation are valid files
    tilewise does not read (UnsupportedError, never CorruptError); a block index 0, a focal plane 0 and a
    time point of its own read (T 2 where the others are at 0: a second time point of one tile)."""
    path = czi.write_czi(tmp_path / "s.czi", slidegen.tissue_image(600, 500, seed=6), label=False, preview=False)
    data = bytearray(path.read_bytes())
    at = data.find(b"C\0\0\0\0\0\0\0")  # the first subblock's channel dimension, in the directory
    assert at > 0
    data[at:at + 8] = dimension.encode() + b"\0\0\0" + start.to_bytes(4, "little")
    path.write_bytes(data)
    if isinstance(outcome, str):
        with pytest.raises(tilewise.UnsupportedError, match=outcome):
            tilewise.open(path)
        return
    slide = tilewise.open(path)
    assert slide.shape(0)[:3] == outcome
    slide.read_region((0, 0), (128, 128), t=outcome[0] - 1)


def test_a_binary_only_ome_tiff_reads_its_companion_metadata(tmp_path):
    """A member of a multi-file set whose XML is BinaryOnly: the set's metadata is the companion .ome file
    it names; missing, the open fails naming it; present, the member reads as the image it describes."""
    path = tmp_path / "part.ome.tif"
    xml = ('<?xml version="1.0" encoding="UTF-8"?><OME xmlns="http://www.openmicroscopy.org/Schemas/OME/2016-06" '
           'UUID="urn:uuid:1"><BinaryOnly MetadataFile="set.companion.ome" UUID="urn:uuid:2"/></OME>')
    image = slidegen.tissue_image(200, 100, seed=1)
    tifffile.imwrite(path, image, photometric="rgb", tile=(64, 64), description=xml, metadata=None)
    with pytest.raises(tilewise.NotFoundError, match="the set's metadata file \"set.companion.ome\""):
        tilewise.open(path)
    (tmp_path / "set.companion.ome").write_text(
        '<?xml version="1.0" encoding="UTF-8"?><OME xmlns="http://www.openmicroscopy.org/Schemas/OME/2016-06" '
        'UUID="urn:uuid:2"><Image ID="Image:0" Name="part"><Pixels ID="Pixels:0" DimensionOrder="XYCZT" Type="uint8" '
        'SizeX="200" SizeY="100" SizeZ="1" SizeC="3" SizeT="1"><Channel ID="Channel:0:0" SamplesPerPixel="3"/>'
        '<TiffData IFD="0" PlaneCount="1"><UUID FileName="part.ome.tif">urn:uuid:1</UUID></TiffData></Pixels></Image></OME>')
    slide = tilewise.open(path)
    assert slide.is_rgb and np.array_equal(slide.read_region((0, 0), (200, 100)), image)
    (tmp_path / "set.companion.ome").write_text("not xml")
    with pytest.raises(tilewise.CorruptError, match="holds no OME-XML"):
        tilewise.open(path)
