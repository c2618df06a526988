"""DICOM VL Whole Slide Microscopy series (tests/data/dicom_wsi.py writes them with pydicom): against
OpenSlide 4.0.1 for what it reads, against pydicom + imagecodecs (and the lossless source image) for what it
refuses (JPEG-LS), and through the compatibility modules and the batch loader."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

import dicom_wsi
import slidegen
import tilewise
from conftest import shared_file
from test_formats import compare_with_openslide

openslide = pytest.importorskip("openslide")
pydicom = pytest.importorskip("pydicom")


@pytest.fixture(scope="module")
def image() -> np.ndarray:
    return slidegen.tissue_image(1000, 700, seed=3)


def assert_same_properties(path):
    ours = dict(tilewise.open(path).properties)
    theirs = dict(openslide.OpenSlide(str(path)).properties)
    assert sorted(set(theirs) - set(ours)) == []
    assert sorted(set(ours) - set(theirs)) == []
    assert {k: v for k, v in ours.items() if theirs[k] != v} == {}


@pytest.mark.parametrize("codec,tolerance", [("jpeg", 0), ("jpeg-rgb", 0), ("jpeg2000", 1), ("jpeg2000-lossless", 0),
                                             ("raw", 0)])
def test_series_matches_openslide(tmp_path, image, codec, tolerance):
    first = dicom_wsi.write_series(tmp_path, image, levels=3, tile=256, codec=codec)
    for opened in (first, tmp_path / "slide-level2.dcm", tmp_path / "slide-label.dcm"):
        slide = compare_with_openslide(opened, tolerance)
        assert slide.format == "dicom"
        assert len(slide.levels) == 3
    assert_same_properties(first)
    assert slide.properties["openslide.mpp-x"] == "0.25"
    assert slide.properties["openslide.objective-power"] == "20"
    assert set(slide.associated_images) == {"label", "macro", "thumbnail"}
    lossless = codec in ("jpeg2000-lossless", "raw")
    if lossless:
        assert (slide.read_region((0, 0), (1000, 700)) == image).all()


@pytest.mark.parametrize("offsets,fragments", [("basic", 1), ("extended", 1), ("none", 1), ("basic", 3), ("none", 3)],
                         ids=["bot", "eot", "walk", "bot-fragmented", "walk-fragmented"])
def test_frames_found_every_way(tmp_path, image, offsets, fragments):
    series = dicom_wsi.new_series()
    path = dicom_wsi.write_instance(tmp_path / "x.dcm", image, series=series, offsets=offsets, fragments_per_frame=fragments)
    if offsets == "none" and fragments > 1:
        # libdicom cannot tell such frames apart ("too many frames in PixelData"); tilewise finds them by
        # their codestream markers: the pixels equal those of the same frames behind a Basic Offset Table.
        theirs = openslide.OpenSlide(str(path))
        with pytest.raises(openslide.OpenSlideError, match="too many frames"):
            theirs.read_region((0, 0), 0, (10, 10))
        (tmp_path / "bot").mkdir()
        indexed = dicom_wsi.write_instance(tmp_path / "bot" / "x.dcm", image, series=series, offsets="basic",
                                           fragments_per_frame=fragments)
        compare_with_openslide(indexed)
        assert (tilewise.open(path).read_region((0, 0), (1000, 700)) ==
                tilewise.open(indexed).read_region((0, 0), (1000, 700))).all()
        return
    compare_with_openslide(path)
    assert_same_properties(path)


def test_sparse_tiles_are_absent(tmp_path, image):
    path = dicom_wsi.write_instance(tmp_path / "sparse.dcm", image, series=dicom_wsi.new_series(), sparse_missing=[1, 5, 11])
    slide = compare_with_openslide(path)
    absent = slide.absent_tiles(0)
    assert absent.shape == (3, 4) and set(zip(*np.nonzero(absent))) == {(0, 1), (1, 1), (2, 3)}
    assert (slide.read_region((256, 0), (256, 256)) == 255).all()
    # OpenSlide draws nothing where a tile is absent: transparent, through tilewise.openslide too.
    import tilewise.openslide as tos
    for loc, size in [((200, 100), (400, 300)), ((700, 500), (300, 200))]:
        ours = np.asarray(tos.OpenSlide(str(path)).read_region(loc, 0, size))
        theirs = np.asarray(openslide.OpenSlide(str(path)).read_region(loc, 0, size))
        assert (ours == theirs).all()


def test_a_sparse_grid_far_larger_than_its_frames_fails_at_open(tmp_path, image):
    """9 frames in a declared 300,000^2 matrix (1,373,584 grid positions, over 1,024 per frame and 2^20): a clear
    error at open, not gigabytes of unit tables."""
    path = dicom_wsi.write_instance(tmp_path / "huge.dcm", image, series=dicom_wsi.new_series(), sparse_missing=[1, 5, 11])
    ds = pydicom.dcmread(path)
    ds.TotalPixelMatrixColumns = ds.TotalPixelMatrixRows = 300000
    ds.save_as(path)
    with pytest.raises(tilewise.CorruptError, match=r"too many tiles \(1373584 for 9 frames\)"):
        tilewise.open(path)


def test_folder_opens_as_its_series(tmp_path, image):
    folder = tmp_path / "series"
    dicom_wsi.write_series(folder, image, levels=2)
    other = dicom_wsi.write_series(tmp_path / "other", image[:300, :400], levels=1, associated=False, name="zz")
    shutil.copy(other, folder / "zz-other-series.dcm")  # a different series in the same folder is ignored
    shutil.copy(folder / "slide-level1.dcm", folder / "slide-level1-copy.dcm")  # a copy of an instance too
    (folder / "notes.txt").write_text("not DICOM")
    slide = tilewise.open(folder)
    assert [lv.dimensions for lv in slide.levels] == [(1000, 700), (500, 350)]
    assert slide.properties == tilewise.open(folder / "slide-level0.dcm").properties


def test_jpegls_against_pydicom(tmp_path, image):
    """OpenSlide refuses JPEG-LS; the frames decoded by pydicom + imagecodecs and the lossless source agree."""
    imagecodecs = pytest.importorskip("imagecodecs")
    path = dicom_wsi.write_series(tmp_path, image, levels=2, codec="jpegls", associated=False)
    with pytest.raises(openslide.OpenSlideError, match="Unsupported transfer syntax"):
        openslide.OpenSlide(str(path))
    slide = tilewise.open(path)
    assert slide.levels[0].compression == "jpeg-ls"
    assert (slide.read_region((0, 0), (1000, 700)) == image).all()
    ds = pydicom.dcmread(tmp_path / "slide-level1.dcm")
    frames = list(pydicom.encaps.generate_frames(ds.PixelData, number_of_frames=int(ds.NumberOfFrames)))
    level1 = slide.read_region((0, 0), (500, 350), level=1)
    across = -(-ds.TotalPixelMatrixColumns // ds.Columns)
    for i, frame in enumerate(frames):
        r, c = divmod(i, across)
        tile = imagecodecs.jpegls_decode(frame)
        part = level1[r * 256:(r + 1) * 256, c * 256:(c + 1) * 256]
        assert (tile[:part.shape[0], :part.shape[1]] == part).all(), f"frame {i}"


def test_icc_profiles(tmp_path, image):
    icc = bytes(range(256)) * 4
    path = dicom_wsi.write_instance(tmp_path / "icc.dcm", image, series=dicom_wsi.new_series(), icc=icc)
    slide = tilewise.open(path)
    assert slide.icc_profile == icc
    assert_same_properties(path)
    assert slide.properties["openslide.icc-size"] == str(len(icc))


def test_focal_planes_without_a_spacing_read_as_planes(tmp_path, image):
    """TILED_FULL with two focal planes and no Spacing Between Slices: frames 12-23 (of 24) are the second
    focal plane, read as z 1; the plain read (and the drop-ins' RGB rendering) is the first."""
    series = dicom_wsi.new_series()
    # 6 x 4 frames of a 1000 x 1400 image, declared as 1000 x 700 in two planes: frames 12-23 are plane 2.
    path = dicom_wsi.write_instance(tmp_path / "z.dcm", np.concatenate([image, 255 - image]), series=series, tile=256,
                                    codec="raw")
    ds = pydicom.dcmread(path)
    ds.TotalPixelMatrixRows = 700
    ds.TotalPixelMatrixFocalPlanes = 2
    ds.save_as(path)
    slide = tilewise.open(path)
    assert slide.levels[0].dimensions == (1000, 700)
    assert slide.shape(0)[:3] == (1, 3, 2) and slide.warnings == ()
    assert (slide.read_region((0, 0), (1000, 700), c="rgb") == image).all()
    assert (slide.read_region((0, 0), (1000, 700), z=0) == image).all()
    # the second plane is the stored image's tile rows 3-5 (from pixel row 768, its last rows white padding)
    stored = np.full((1536, 1000, 3), 255, np.uint8)
    stored[:1400] = np.concatenate([image, 255 - image])
    assert (slide.read_region((0, 0), (1000, 700), z=1) == stored[768:1468]).all()


def test_through_the_compatibility_modules_and_the_loader(tmp_path, image):
    path = dicom_wsi.write_series(tmp_path, image, levels=2)
    import tilewise.openslide as tos
    from tilewise.cucim import CuImage

    ours, theirs = tos.OpenSlide(str(path)), openslide.OpenSlide(str(path))
    assert ours.properties[tos.PROPERTY_NAME_VENDOR] == "dicom"
    assert (np.asarray(ours.read_region((300, 200), 1, (200, 100))) ==
            np.asarray(theirs.read_region((300, 200), 1, (200, 100)))).all()
    assert (np.asarray(ours.get_thumbnail((128, 128))) == np.asarray(theirs.get_thumbnail((128, 128)))).all()
    img = CuImage(str(path))
    assert img.resolutions["level_count"] == 2
    region = np.asarray(img.read_region((100, 50), (128, 96), 0))
    assert (region[..., :3] == np.asarray(theirs.read_region((100, 50), 0, (128, 96)))[..., :3]).all()
    slide = tilewise.open(path)
    locations = [(0, 0), (700, 300), (850, 550)]
    batch = np.asarray(next(iter(slide.read_regions(locations, (128, 128), batch_size=3, num_workers=2))))
    for k, (x, y) in enumerate(locations):
        assert (batch[k] == slide.read_region((x, y), (128, 128))).all()


def test_openslide_python_fixture(tmp_path):
    """openslide-python's DICOM fixture (two instances: a level and a thumbnail, each with an ICC profile)."""
    folder = tmp_path / "boxes"
    folder.mkdir()
    for name in ("boxes_0.dcm", "boxes_1.dcm"):
        shutil.copy(shared_file(f"openslide-python/{name}"), folder / name)
    for name in ("boxes_0.dcm", "boxes_1.dcm"):
        slide = compare_with_openslide(folder / name)
        assert_same_properties(folder / name)
    assert slide.associated_icc_profile("thumbnail") == slide.icc_profile


@pytest.mark.filterwarnings("ignore::UserWarning")  # pydicom warns about the deliberately odd values
def test_property_values_as_openslide_writes_them(tmp_path, image):
    """Multi-valued strings of each VR (libdicom splits some and keeps others whole), tags, doubles, empty
    values and nested sequences: the same `dicom.*` keys and values as OpenSlide."""
    path = dicom_wsi.write_instance(tmp_path / "vr.dcm", image[:300, :300], series=dicom_wsi.new_series())
    ds = pydicom.dcmread(path)
    strings = {0x00181020: "LO", 0x00081010: "SH", 0x00081070: "PN", 0x00080054: "AE", 0x00081160: "IS",
               0x0008001A: "UI", 0x00080023: "DA", 0x00080033: "TM", 0x0008002A: "DT", 0x00101010: "AS",
               0x00204000: "LT", 0x00080081: "ST", 0x00180015: "CS", 0x00181164: "DS"}
    special = {"IS": "1\\22 ", "DS": " 0.5\\1.50 ", "UI": "1.2\\1.3"}
    for t, vr in strings.items():
        ds[t] = pydicom.DataElement(t, vr, special.get(vr, "a1\\b2 "))
    ds.AccessionNumber = ""
    ds.add_new(0x00460062, "FD", [1.5, 0.1])
    ds.add_new(0x00209165, "AT", [0x0048021E])
    ds.save_as(path)
    assert_same_properties(path)


@pytest.mark.filterwarnings("ignore::UserWarning")  # pydicom warns about the deliberately odd values
def test_property_values_keep_their_blanks_as_openslide_does(tmp_path, image):
    """Blanks are part of the `dicom.*` values where OpenSlide keeps them: one padding character comes off
    the end of the element, DS and IS values lose their blanks, the other VRs keep theirs (inside, at the
    start and at the end of each value), and a NUL ends the value."""
    path = dicom_wsi.write_instance(tmp_path / "blanks.dcm", image[:300, :300], series=dicom_wsi.new_series())
    ds = pydicom.dcmread(path)
    raw = {0x00282112: ("DS", b" 10.50\\ 2E1 "), 0x00200013: ("IS", b" 007 "), 0x00080070: ("LO", b"ab\t"),
           0x00081030: ("LO", b"a  \\b  "), 0x00280301: ("CS", b"NO\\ YES  "), 0x00180015: ("CS", b" X  "),
           0x00181000: ("LO", b"SN1 \x00"), 0x0008103E: ("LO", b"Stu\x00y "), 0x00081090: ("LO", b"  "),
           0x00181020: ("LO", b"v1 \\v2  "), 0x00080080: ("LO", b"Clinic   "), 0x00081040: ("LO", b"x\r\n")}
    for t, (vr, value) in raw.items():
        ds[t] = pydicom.DataElement(t, vr, value)
    ds.save_as(path)
    theirs = openslide.OpenSlide(str(path)).properties
    assert theirs["dicom.BurnedInAnnotation[1]"] == " YES  " and theirs["dicom.InstitutionName"] == "Clinic   "
    assert_same_properties(path)


def test_concatenation_is_one_level(tmp_path, image):
    """A level split over two instances of one concatenation reads as the unsplit level."""
    whole = dicom_wsi.write_instance(tmp_path / "whole.dcm", image, series=dicom_wsi.new_series())
    folder = tmp_path / "concatenation"
    dicom_wsi.write_concatenation(whole, folder, 5)
    split = tilewise.open(folder / "part2.dcm")
    assert split.levels[0].dimensions == (1000, 700)
    assert (split.read_region((0, 0), (1000, 700)) == tilewise.open(whole).read_region((0, 0), (1000, 700))).all()


@pytest.mark.parametrize("how", ["bot", "eot", "empty", "concatenation"])
def test_series_written_by_wsidicom(tmp_path, image, how):
    """An independent writer (wsidicom) re-writes a series: its own metadata layout, offset tables (basic,
    extended, none) and concatenations; tilewise matches OpenSlide on every result."""
    wsidicom = pytest.importorskip("wsidicom")
    from wsidicom.options import ConcatenationByFrames

    source = dicom_wsi.write_series(tmp_path / "source", image, levels=3)
    out = tmp_path / how
    out.mkdir()
    options = {"offset_table": "bot" if how == "concatenation" else how}
    if how == "concatenation":
        options["concatenation"] = ConcatenationByFrames(5)
    with wsidicom.WsiDicom.open(source.parent) as wsi:
        written = wsi.save(out, **options)
    assert len(written) == (8 if how == "concatenation" else 6)
    for path in sorted(out.iterdir())[:2]:
        slide = compare_with_openslide(path)
        assert_same_properties(path)
        assert [lv.dimensions for lv in slide.levels] == [(1000, 700), (500, 350), (250, 175)]
        assert set(slide.associated_images) == {"label", "macro", "thumbnail"}


def test_other_pyramids_and_flavours_are_ignored_with_a_warning(tmp_path, image):
    folder = tmp_path / "series"
    first = dicom_wsi.write_series(folder, image, levels=2, associated=False)
    pyramid = pydicom.uid.generate_uid()
    for path in folder.iterdir():
        ds = pydicom.dcmread(path)
        ds.PyramidUID = pyramid
        ds.save_as(path)
    other = pydicom.dcmread(first)  # a second pyramid of the series, and an instance of another flavour
    other.SOPInstanceUID = other.file_meta.MediaStorageSOPInstanceUID = pydicom.uid.generate_uid()
    other.PyramidUID = pydicom.uid.generate_uid()
    other.save_as(folder / "other-pyramid.dcm")
    odd = pydicom.dcmread(first)
    odd.SOPInstanceUID = odd.file_meta.MediaStorageSOPInstanceUID = pydicom.uid.generate_uid()
    odd.ImageType = ["DERIVED", "PRIMARY", "LOCALIZER", "NONE"]
    odd.save_as(folder / "localizer.dcm")
    slide = tilewise.open(first)
    assert [lv.dimensions for lv in slide.levels] == [(1000, 700), (500, 350)]
    assert any("another pyramid" in w for w in slide.warnings), slide.warnings
    assert any('flavour "LOCALIZER"' in w for w in slide.warnings), slide.warnings
