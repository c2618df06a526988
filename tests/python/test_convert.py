"""tilewise.convert and `tilewise convert`: tiled pyramidal TIFFs, OME-TIFFs and DICOM WSI series, checked by
readers tilewise did not write (tifffile with imagecodecs, OpenSlide 4.0.1, ome-types for the OME-XML,
pydicom, wsidicom and dciodvfy for DICOM): every plane of every level (exact for lossless codecs, within JPEG's
error for JPEG), the pyramid's geometry, resolution, channel metadata and the failure paths (nothing left at
the output)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import imagecodecs
import numpy as np
import ome_types
import openslide
import pydicom
from pydicom.encaps import generate_frames
import pytest
import tifffile
import wsidicom

import slidegen
import tilewise
from test_ome_planes import reference_levels

EXE = shutil.which("tilewise", path=str(Path(sys.executable).parent))


def halvings(level0: np.ndarray, tile: int, max_levels: int = 0) -> list[np.ndarray]:
    """The pyramid the writer promises: each level the 2 x 2 box mean of the one before (rounded half up),
    an odd last row or column repeated, down to the level that fits one tile."""
    out = [level0]
    while max(out[-1].shape[:2]) > tile and (not max_levels or len(out) < max_levels):
        p = out[-1].astype(np.uint16)
        if p.shape[0] % 2:
            p = np.concatenate([p, p[-1:]], axis=0)
        if p.shape[1] % 2:
            p = np.concatenate([p, p[:, -1:]], axis=1)
        out.append(((p[0::2, 0::2] + p[1::2, 0::2] + p[0::2, 1::2] + p[1::2, 1::2] + 2) // 4).astype(np.uint8))
    return out


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    return float(10 * np.log10(255**2 / np.mean((a.astype(float) - b.astype(float)) ** 2)))


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """A lossless source (deflate, 128-pixel tiles, mpp 0.25) whose size is not a multiple of any tile:
    (path, its level 0 as tilewise reads it)."""
    path = tmp_path_factory.mktemp("convert") / "source.tif"
    image = slidegen.tissue_image(1100, 777, seed=11)
    slidegen.write_tifffile_pyramid(path, image, levels=2, compression="zlib", tile=(128, 128), mpp=0.25)
    with tilewise.open(path) as s:
        level0 = s.read_region((0, 0), s.dimensions, level=0)
    np.testing.assert_array_equal(level0, image)
    return path, level0


def tifffile_levels(path) -> tuple[list[np.ndarray], tifffile.TiffPage]:
    with tifffile.TiffFile(path) as tf:
        assert len(tf.series) == 1
        return [level.asarray() for level in tf.series[0].levels], tf.pages[0]


def openslide_levels(path) -> list[np.ndarray]:
    with openslide.OpenSlide(str(path)) as o:
        assert o.properties["openslide.vendor"] == "generic-tiff"
        out = []
        for k, (w, h) in enumerate(o.level_dimensions):
            rgba = np.asarray(o.read_region((0, 0), k, (w, h)))
            assert (rgba[..., 3] == 255).all()
            out.append(rgba[..., :3])
        return out


@pytest.mark.parametrize("codec,compression", [("deflate", 8), ("none", 1)])
def test_lossless_pyramids_are_exact_in_tifffile_and_openslide(tmp_path, source, codec, compression):
    path, level0 = source
    out = tmp_path / "out.tif"
    tilewise.convert(path, out, codec=codec, tile_size=256)
    expected = halvings(level0, 256)
    assert [e.shape[:2] for e in expected] == [(777, 1100), (389, 550), (195, 275), (98, 138)]
    levels, page = tifffile_levels(out)
    assert page.compression == compression and (page.tilelength, page.tilewidth) == (256, 256)
    with tifffile.TiffFile(out) as tf:
        assert tf.is_bigtiff
    assert len(levels) == len(expected)
    for k, (got, want) in enumerate(zip(levels, expected)):
        np.testing.assert_array_equal(got, want, err_msg=f"tifffile level {k}")
    for k, (got, want) in enumerate(zip(openslide_levels(out), expected)):
        np.testing.assert_array_equal(got, want, err_msg=f"OpenSlide level {k}")


def test_jpeg_pyramid_is_the_source_within_jpeg_error_and_readers_agree(tmp_path, source):
    path, level0 = source
    out = tmp_path / "out.tif"
    tilewise.convert(path, out, codec="jpeg", quality=90, tile_size=256)
    expected = halvings(level0, 256)
    levels, page = tifffile_levels(out)
    assert page.compression == 7 and page.photometric == 6  # JPEG, YCbCr
    assert len(levels) == len(expected)
    for k, (got, want) in enumerate(zip(levels, expected)):
        # JPEG's own error: the same level through imagecodecs' libjpeg-turbo at the same quality, 4:2:0
        reference = imagecodecs.jpeg8_decode(imagecodecs.jpeg8_encode(want, level=90, subsampling=(2, 2)))
        ours, theirs = psnr(got, want), psnr(reference, want)
        assert ours > theirs - 0.5, f"level {k}: PSNR {ours:.2f} dB, libjpeg-turbo on the whole level {theirs:.2f} dB"
    opened = openslide_levels(out)
    with tilewise.open(out) as s:
        assert s.format == "generic-tiff"
        assert [lv.dimensions for lv in s.levels] == [(e.shape[1], e.shape[0]) for e in expected]
        for k, theirs in enumerate(opened):
            ours = s.read_region((0, 0), s.levels[k].dimensions, level=k)
            np.testing.assert_array_equal(ours, theirs, err_msg=f"tilewise and OpenSlide, level {k}")
            # libjpeg-turbo through imagecodecs: the same decode up to its upsampling
            assert np.abs(ours.astype(int) - levels[k].astype(int)).max() <= 4


@pytest.mark.parametrize("codec", ["jpeg2000-lossless", "jpeg2000"])
def test_jpeg2000_tiles_read_alike_in_tifffile_and_openslide(tmp_path, source, codec):
    """JPEG 2000 tiles (TIFF compression 33005, a J2K codestream with its own colour transform): tifffile
    (imagecodecs' OpenJPEG) reads a TIFF's levels, OpenSlide an SVS's (Aperio's JPEG 2000), both as tilewise
    reads them (within 1 when lossy: each rounds the irreversible transform's output its own way), exactly
    the source's pyramid when lossless, within 36 dB PSNR of it at quality 90 (42.5 dB aimed at per tile, an
    edge tile's padding included: a small level of one padded tile gets less)."""
    path, level0 = source
    expected = halvings(level0, 256)
    tilewise.convert(path, tmp_path / "out.tif", codec=codec, tile_size=256)
    tilewise.convert(path, tmp_path / "out.svs", codec=codec, tile_size=256)
    levels, page = tifffile_levels(tmp_path / "out.tif")
    assert page.compression == 33005 and len(levels) == len(expected)
    with tilewise.open(tmp_path / "out.tif") as s, openslide.OpenSlide(str(tmp_path / "out.svs")) as o:
        assert o.properties["openslide.vendor"] == "aperio" and o.level_count == len(expected)
        for k, want in enumerate(expected):
            ours = s.read_region((0, 0), (want.shape[1], want.shape[0]), level=k)
            theirs = np.asarray(o.read_region((0, 0), k, (want.shape[1], want.shape[0])))[..., :3]
            tolerance = 0 if codec.endswith("lossless") else 1
            assert np.abs(levels[k].astype(int) - ours).max() <= tolerance, f"tifffile, level {k}"
            assert np.abs(theirs.astype(int) - ours).max() <= tolerance, f"OpenSlide, level {k}"
            if codec == "jpeg2000-lossless":
                np.testing.assert_array_equal(ours, want, err_msg=f"level {k}")
            else:
                assert psnr(ours, want) > 36, f"level {k}"


def test_jpeg_without_subsampling_is_4_4_4(tmp_path, source):
    path, level0 = source
    out = tmp_path / "out.tif"
    tilewise.convert(path, out, codec="jpeg", quality=90, subsample=False, levels=1)
    levels, page = tifffile_levels(out)
    assert page.tags["YCbCrSubSampling"].value == (1, 1)
    reference = imagecodecs.jpeg8_decode(imagecodecs.jpeg8_encode(level0, level=90, subsampling=(1, 1)))
    assert psnr(levels[0], level0) > psnr(reference, level0) - 0.5
    with openslide.OpenSlide(str(out)) as o:
        theirs = np.asarray(o.read_region((0, 0), 0, o.dimensions))[..., :3]
    with tilewise.open(out) as s:
        np.testing.assert_array_equal(s.read_region((0, 0), s.dimensions), theirs)


def test_resolution_icc_and_description_follow_the_source(tmp_path, source):
    path, _ = source
    out = tmp_path / "out.tif"
    tilewise.convert(path, out, codec="deflate", tile_size=128, levels=2)
    with tifffile.TiffFile(out) as tf:
        pages = [p for p in tf.pages]
        assert len(pages) == 2 and pages[0].tilewidth == 128
        assert pages[0].tags["ResolutionUnit"].value == 3  # centimetre
        x = pages[0].tags["XResolution"].value
        assert x[0] / x[1] == pytest.approx(1e4 / 0.25, rel=1e-6)
        x1 = pages[1].tags["XResolution"].value
        assert x1[0] / x1[1] == pytest.approx(1e4 / 0.25 / (1100 / 550), rel=1e-3)
        assert pages[1].tags["NewSubfileType"].value == 1
        assert "source.tif (generic-tiff)" in pages[0].description
    with tilewise.open(out) as s:
        assert s.mpp == pytest.approx((0.25, 0.25), rel=1e-6)
    with openslide.OpenSlide(str(out)) as o:
        assert float(o.properties["openslide.mpp-x"]) == pytest.approx(0.25, rel=1e-6)


def test_progress_reaches_the_height_and_an_exception_in_it_leaves_nothing(tmp_path, source):
    path, _ = source
    seen = []
    tilewise.convert(path, tmp_path / "a.tif", tile_size=256, progress=lambda done, total: seen.append((done, total)))
    assert seen == [(256, 777), (512, 777), (768, 777), (777, 777)]

    def stop(done, total):
        raise KeyboardInterrupt("stop")

    with pytest.raises(KeyboardInterrupt):
        tilewise.convert(path, tmp_path / "b.tif", tile_size=256, progress=stop)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.tif"]


def test_options_out_of_range_are_refused_before_anything_is_written(tmp_path, source):
    path, _ = source
    for kwargs, error in [({"codec": "webp"}, tilewise.InvalidArgumentError),
                          ({"tile_size": 100}, tilewise.InvalidArgumentError),
                          ({"quality": 0}, tilewise.InvalidArgumentError)]:
        with pytest.raises(error):
            tilewise.convert(path, tmp_path / "x.tif", **kwargs)
    with pytest.raises(tilewise.InvalidArgumentError, match=r"\.tif or \.tiff"):
        tilewise.convert(path, tmp_path / "x.png")
    assert list(tmp_path.iterdir()) == []


def test_convert_on_a_device_states_what_it_writes_and_needs(tmp_path, source):
    """device="cuda": an output the GPU path does not write is refused as such (before the device is asked
    for); without a usable GPU the error says so; an unknown device is named; nothing is written."""
    path, _ = source
    with pytest.raises(tilewise.InvalidArgumentError, match="on the GPU writes RGB slides with codec jpeg"):
        tilewise.convert(path, tmp_path / "x.zarr", device="cuda")
    with pytest.raises(tilewise.InvalidArgumentError, match="not deflate"):
        tilewise.convert(path, tmp_path / "x.tif", codec="deflate", device="cuda:0")
    with pytest.raises(tilewise.InvalidArgumentError, match="unknown device"):
        tilewise.convert(path, tmp_path / "x.tif", device="tpu")
    if not tilewise._core.gpu_status(0).ok:
        with pytest.raises(tilewise.UnsupportedError, match="convert on the GPU"):
            tilewise.convert(path, tmp_path / "x.tif", device="cuda")
    r = subprocess.run([EXE, "convert", str(path), str(tmp_path / "x.tif"), "--device", "tpu"], capture_output=True,
                       text=True)
    assert r.returncode != 0 and "unknown device" in r.stderr
    assert list(tmp_path.iterdir()) == []


def halvings_of_planes(planes: np.ndarray, tile: int) -> list[np.ndarray]:
    """halvings() of every (T, C, Z) plane of a (T, C, Z, Y, X) array, in the array's type (floats: the mean
    of four, in double precision, then the type)."""
    t_size, c_size, z_size, h, w = planes.shape
    out = [planes]
    while max(out[-1].shape[-2:]) > tile:
        p = out[-1].astype(np.float64 if planes.dtype.kind == "f" else np.int64)
        if p.shape[-2] % 2:
            p = np.concatenate([p, p[..., -1:, :]], axis=-2)
        if p.shape[-1] % 2:
            p = np.concatenate([p, p[..., -1:]], axis=-1)
        total = p[..., 0::2, 0::2] + p[..., 1::2, 0::2] + p[..., 0::2, 1::2] + p[..., 1::2, 1::2]
        out.append((total * 0.25 if planes.dtype.kind == "f" else (total + 2) // 4).astype(planes.dtype))
    return out


@pytest.mark.parametrize("dtype", ["uint16", "uint8", "float32"])
def test_channels_and_planes_to_ome_tiff_every_plane_of_every_level(tmp_path, dtype):
    """A 3-channel, 2-plane OME-TIFF with channel names and colours to an OME-TIFF: tifffile reads one series
    whose levels (SubIFDs) are the halvings of every plane, ome-types reads the channels back, and tilewise
    reopens it with the same axes."""
    rng = np.random.default_rng(4)
    data = (rng.normal(500, 200, (2, 3, 300, 420)) if dtype == "float32" else
            rng.integers(0, np.iinfo(dtype).max, (2, 3, 300, 420), endpoint=True)).astype(dtype)  # Z C Y X
    src = tmp_path / "src.ome.tif"
    meta = {"axes": "ZCYX", "Channel": {"Name": ["DAPI", "FITC", "Cy5"]}, "PhysicalSizeX": 0.5,
            "PhysicalSizeY": 0.5}
    with tifffile.TiffWriter(src, ome=True) as tw:
        tw.write(data, metadata=meta, tile=(64, 64), compression="zlib", photometric="minisblack")
    out = tmp_path / "out.ome.tif"
    tilewise.convert(src, out, tile_size=128)
    expected = halvings_of_planes(np.moveaxis(data, 0, 1)[np.newaxis], 128)  # T C Z Y X
    got = reference_levels(out)
    assert len(got) == len(expected) == 3
    for k, (g, e) in enumerate(zip(got, expected)):
        assert g.dtype == e.dtype
        np.testing.assert_array_equal(g, e, err_msg=f"level {k}")
    with tifffile.TiffFile(out) as tf:
        assert tf.is_ome and tf.is_bigtiff and tf.pages[0].compression == 8
        ome = ome_types.from_xml(tf.ome_metadata)
    pixels = ome.images[0].pixels
    assert (pixels.size_c, pixels.size_z, pixels.size_t, pixels.size_x, pixels.size_y) == (3, 2, 1, 420, 300)
    assert pixels.type.value == ("float" if dtype == "float32" else dtype)
    assert [c.name for c in pixels.channels] == ["DAPI", "FITC", "Cy5"]
    assert pixels.physical_size_x == pytest.approx(0.5)
    with tilewise.open(out) as s:
        assert s.format == "ome-tiff"
        assert [c.name for c in s.channels] == ["DAPI", "FITC", "Cy5"]
        for k, e in enumerate(expected):
            assert s.shape(k) == e.shape
            for z in range(2):
                np.testing.assert_array_equal(s.read_region((0, 0), (e.shape[-1], e.shape[-2]), level=k, z=z),
                                              np.moveaxis(e[0, :, z], 0, -1))


def test_an_rgb_slide_to_ome_tiff_is_one_interleaved_plane(tmp_path, source):
    path, level0 = source
    out = tmp_path / "rgb.ome.tif"
    tilewise.convert(path, out, codec="deflate", tile_size=256)
    with tifffile.TiffFile(out) as tf:
        assert tf.is_ome
        series = tf.series[0]
        levels = [lv.asarray() for lv in series.levels]
        ome = ome_types.from_xml(tf.ome_metadata)
    for k, (got, want) in enumerate(zip(levels, halvings(level0, 256))):
        np.testing.assert_array_equal(got, want, err_msg=f"level {k}")
    assert len(levels) == 4
    assert ome.images[0].pixels.channels[0].samples_per_pixel == 3
    with tilewise.open(out) as s:
        assert s.format == "ome-tiff" and s.dtype == np.uint8 and [c.name for c in s.channels] == ["R", "G", "B"]
        assert s.level_count == 4
        np.testing.assert_array_equal(s.read_region((0, 0), s.dimensions), level0)


def test_channels_need_an_ome_name_and_a_lossless_codec(tmp_path):
    src = tmp_path / "c.ome.tif"
    with tifffile.TiffWriter(src, ome=True) as tw:
        tw.write(np.zeros((2, 64, 64), np.uint16), metadata={"axes": "CYX"}, photometric="minisblack")
    with pytest.raises(tilewise.InvalidArgumentError, match=r"name the output \*\.ome\.tif"):
        tilewise.convert(src, tmp_path / "c.tif")
    with pytest.raises(tilewise.InvalidArgumentError, match="deflate"):
        tilewise.convert(src, tmp_path / "c2.ome.tif", codec="jpeg")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.ome.tif"]


@pytest.mark.parametrize("format", ["tiff", "dicom"])
def test_copied_jpeg_tiles_keep_the_sources_pixels(tmp_path, vips_jpeg_slide, format):
    """copy_tiles: level 0's JPEG tiles (libvips, 256-pixel, 4:2:0) are copied as stored, so level 0 decodes to
    exactly the source's pixels (a re-encode would not), OpenSlide reads them the same; level 1 is still the
    halving of the decoded level 0, encoded; with another tile size nothing is copied."""
    out = tmp_path / ("copy.tif" if format == "tiff" else "copy")
    tilewise.convert(vips_jpeg_slide, out, format=format, copy_tiles=True, tile_size=256)
    with tilewise.open(vips_jpeg_slide) as src, tilewise.open(out) as dst:
        source0 = src.read_region((0, 0), src.dimensions)
        np.testing.assert_array_equal(dst.read_region((0, 0), dst.dimensions), source0)
        level1 = dst.read_region((0, 0), dst.levels[1].dimensions, level=1)
        want = halvings(source0, 256)[1]
        reference = imagecodecs.jpeg8_decode(imagecodecs.jpeg8_encode(want, level=90, subsampling=(2, 2)))
        assert psnr(level1, want) > psnr(reference, want) - 0.5
    opened = out if format == "tiff" else sorted(out.iterdir())[0]
    with openslide.OpenSlide(str(opened)) as o:
        np.testing.assert_array_equal(np.asarray(o.read_region((0, 0), 0, o.dimensions))[..., :3], source0)
    if format == "dicom":
        assert dciodvfy_errors(opened) == []
    tilewise.convert(vips_jpeg_slide, tmp_path / "other.tif", copy_tiles=True, tile_size=128)
    with tilewise.open(tmp_path / "other.tif") as dst:
        assert not np.array_equal(dst.read_region((0, 0), dst.dimensions), source0)


def catalogue_slides() -> list[str]:
    """The corruption catalogue's readable slides of every format (scripts/test.sh builds it first)."""
    folder = os.environ.get("TILEWISE_CATALOGUE_DIR")
    if not folder:
        return []
    entries = json.loads((Path(folder) / "catalogue.json").read_text())
    return [str(Path(folder) / e["file"]) for e in entries if e["expect"] == "reads" and e["name"].startswith("good")]


@pytest.mark.parametrize("slide", catalogue_slides() or [None], ids=lambda p: Path(p).parent.name + "/" + Path(p).name if p else "none")
def test_every_format_converts_losslessly(tmp_path, slide):
    """Every readable slide of the catalogue through a lossless conversion: level 0 as tifffile decodes it is
    what tilewise reads from the source - RGB slides to a generic TIFF, others (every channel, plane and time
    point) to an OME-TIFF."""
    if slide is None:
        pytest.skip("the corruption catalogue (TILEWISE_CATALOGUE_DIR, built by scripts/test.sh) is not set")
    with tilewise.open(slide) as s:
        w, h = s.dimensions
        try:  # a generic TIFF takes the RGB slides (their RGB rendering, as read_region gives it)
            tilewise.convert(s, tmp_path / "out.tif", codec="deflate", levels=2, tile_size=128)
            with tifffile.TiffFile(tmp_path / "out.tif") as tf:
                np.testing.assert_array_equal(tf.series[0].levels[0].asarray(), s.read_region((0, 0), (w, h)))
            return
        except tilewise.InvalidArgumentError as e:
            assert "ome.tif" in str(e)
        out = tmp_path / "out.ome.tif"
        tilewise.convert(s, out, codec="deflate", levels=2, tile_size=128)
        got = reference_levels(out)[0]
        t_size, c_size, z_size = got.shape[:3]
        assert got.shape == s.shape(0)
        for t in range(t_size):
            for z in range(z_size):
                np.testing.assert_array_equal(np.moveaxis(got[t, :, z], 0, -1),
                                              s.read_region((0, 0), (w, h), z=z, t=t), err_msg=f"z {z} t {t}")


def damaged_source(tmp_path) -> Path:
    """A 600 x 500 deflate slide of 128-pixel tiles whose tile (0, 1) is garbage."""
    return slidegen.write_damaged_slide(tmp_path / "damaged.tif")


def test_a_damaged_source_tile_stops_the_conversion_naming_it(tmp_path):
    """A tile whose deflate stream is garbage: the error names the source file, level and tile, and neither
    the output nor a partial file is left."""
    src = damaged_source(tmp_path)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    with pytest.raises(tilewise.CorruptError, match=r"damaged\.tif.*level 0 tile \(0,1\)"):
        tilewise.convert(src, out_dir / "out.tif", codec="deflate")
    with pytest.raises(tilewise.CorruptError, match=r"damaged\.tif.*level 0 tile \(0,1\)"):
        tilewise.convert(src, out_dir / "series", format="dicom")
    assert list(out_dir.iterdir()) == []


@pytest.mark.parametrize("tile_size", [48, 256])
def test_skip_damaged_writes_background_and_lists_the_tile_once(tmp_path, tile_size):
    """skip_damaged: the damaged source tile (0, 1) is white in the output, every other pixel is the source's,
    and the tile is listed once even where its rows span several bands (48-row tiles cut its 128 rows)."""
    src = damaged_source(tmp_path)
    skipped = tilewise.convert(src, tmp_path / "out.tif", codec="none", skip_damaged=True, tile_size=tile_size)
    assert len(skipped) == 1 and "damaged.tif" in skipped[0] and "level 0 tile (0,1)" in skipped[0]
    expected = slidegen.tissue_image(600, 500, seed=2)
    expected[128:256, 0:128] = 255
    with tifffile.TiffFile(tmp_path / "out.tif") as tf:
        np.testing.assert_array_equal(tf.series[0].levels[0].asarray(), expected)
    assert tilewise.convert(src.with_name("out.tif"), tmp_path / "again.tif", skip_damaged=True) == []


def dciodvfy_errors(path) -> list[str]:
    """dicom3tools' validator's errors and warnings for one instance, but its DICOMDIR notes (Patient and Study
    ID are type 2, empty here)."""
    tool = shutil.which("dciodvfy")
    assert tool, "dciodvfy (Debian's dicom3tools, installed by scripts/bootstrap.sh) is not on PATH"
    r = subprocess.run([tool, str(path)], capture_output=True, text=True)
    lines = (r.stdout + r.stderr).splitlines()
    return [ln for ln in lines if ln.startswith(("Error", "Warning")) and "DICOMDIR" not in ln]


SYNTAX = {"jpeg": "1.2.840.10008.1.2.4.50", "none": "1.2.840.10008.1.2.1", "jpeg2000": "1.2.840.10008.1.2.4.91",
          "jpeg2000-lossless": "1.2.840.10008.1.2.4.90"}


@pytest.mark.parametrize("codec", ["jpeg", "none", "jpeg2000", "jpeg2000-lossless"])
def test_a_dicom_series_validates_and_reads_alike_in_pydicom_wsidicom_and_openslide(tmp_path, source, codec):
    path, level0 = source
    out = tmp_path / "series"
    tilewise.convert(path, out, format="dicom", codec=codec, tile_size=256)
    expected = halvings(level0, 256)
    files = sorted(out.iterdir())
    assert [f.name for f in files] == [f"level-{k}.dcm" for k in range(len(expected))]
    uids = set()
    for k, f in enumerate(files):
        assert dciodvfy_errors(f) == [], f.name
        d = pydicom.dcmread(f)
        assert d.SOPClassUID == "1.2.840.10008.5.1.4.1.1.77.1.6" and d.DimensionOrganizationType == "TILED_FULL"
        assert (d.TotalPixelMatrixColumns, d.TotalPixelMatrixRows) == (expected[k].shape[1], expected[k].shape[0])
        assert d.NumberOfFrames == -(-expected[k].shape[1] // 256) * -(-expected[k].shape[0] // 256)
        spacing = d.SharedFunctionalGroupsSequence[0].PixelMeasuresSequence[0].PixelSpacing
        assert float(spacing[1]) == pytest.approx(0.25e-3 * 1100 / expected[k].shape[1], rel=1e-6)
        assert len(d.OpticalPathSequence[0].ICCProfile) > 0
        assert d.file_meta.TransferSyntaxUID == SYNTAX[codec]
        if codec.startswith("jpeg2000"):  # the codestream's own colour transform, as pydicom decodes it
            assert d.PhotometricInterpretation == ("YBR_RCT" if codec.endswith("lossless") else "YBR_ICT")
            first = d.pixel_array if int(d.NumberOfFrames) == 1 else d.pixel_array[0]
            np.testing.assert_array_equal(first, imagecodecs.jpeg2k_decode(
                next(generate_frames(d.PixelData, number_of_frames=int(d.NumberOfFrames)))))
            if k == 0 and codec.endswith("lossless"):
                np.testing.assert_array_equal(first, expected[0][:256, :256])
        uids.add((d.StudyInstanceUID, d.SeriesInstanceUID, d.PyramidUID, d.FrameOfReferenceUID))
    assert len(uids) == 1
    w = wsidicom.WsiDicom.open(out)
    # decoders round lossy JPEG 2000's irreversible transform each their own way: within 1
    agree = 1 if codec == "jpeg2000" else 0
    with tilewise.open(out) as s:
        assert s.format == "dicom" and s.mpp == pytest.approx((0.25, 0.25))
        assert [lv.dimensions for lv in s.levels] == [(e.shape[1], e.shape[0]) for e in expected]
        for k, want in enumerate(expected):
            theirs = np.asarray(w.read_region((0, 0), k, (want.shape[1], want.shape[0])))[..., :3]
            ours = s.read_region((0, 0), (want.shape[1], want.shape[0]), level=k)
            assert np.abs(ours.astype(int) - theirs).max() <= agree, f"tilewise and wsidicom, level {k}"
            if codec in ("none", "jpeg2000-lossless"):
                np.testing.assert_array_equal(ours, want, err_msg=f"level {k}")
            elif codec == "jpeg2000":
                assert psnr(ours, want) > 36, f"level {k}"
            else:
                reference = imagecodecs.jpeg8_decode(imagecodecs.jpeg8_encode(want, level=90, subsampling=(2, 2)))
                assert psnr(ours, want) > psnr(reference, want) - 0.5, f"level {k}"
        with openslide.OpenSlide(str(files[0])) as o:
            assert o.properties["openslide.vendor"] == "dicom" and o.level_count == len(expected)
            theirs = np.asarray(o.read_region((0, 0), 0, o.dimensions))[..., :3]
            assert np.abs(theirs.astype(int) - s.read_region((0, 0), s.dimensions)).max() <= agree
    w.close()


def test_dicom_output_refuses_what_it_cannot_describe(tmp_path, source):
    path, _ = source
    no_mpp = tmp_path / "no_mpp.tif"
    slidegen.write_tifffile_pyramid(no_mpp, slidegen.tissue_image(300, 200), levels=1, compression="zlib",
                                    tile=(128, 128), mpp=None)
    with pytest.raises(tilewise.InvalidArgumentError, match="mpp"):
        tilewise.convert(no_mpp, tmp_path / "a", format="dicom")
    with pytest.raises(tilewise.InvalidArgumentError, match="deflate"):
        tilewise.convert(path, tmp_path / "b", format="dicom", codec="deflate")
    channels = tmp_path / "c.ome.tif"
    with tifffile.TiffWriter(channels, ome=True) as tw:  # float samples; then two focal planes
        tw.write(np.zeros((2, 64, 64), np.float32), metadata={"axes": "CYX", "PhysicalSizeX": 0.5,
                                                              "PhysicalSizeY": 0.5}, photometric="minisblack")
        tw.write(np.zeros((2, 2, 64, 64), np.uint16), metadata={"axes": "ZCYX", "PhysicalSizeX": 0.5,
                                                                "PhysicalSizeY": 0.5}, photometric="minisblack")
    with pytest.raises(tilewise.UnsupportedError, match="float32 samples"):
        tilewise.convert(channels, tmp_path / "c", format="dicom")
    with tilewise.open(channels, scene=1) as planes, pytest.raises(tilewise.UnsupportedError, match="focal planes"):
        tilewise.convert(planes, tmp_path / "c", format="dicom")
    occupied = tmp_path / "occupied"
    occupied.mkdir()
    (occupied / "keep.txt").write_text("mine")
    with pytest.raises(tilewise.InvalidArgumentError, match="not empty"):
        tilewise.convert(path, occupied, format="dicom")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.ome.tif", "no_mpp.tif", "occupied"]
    assert [p.name for p in occupied.iterdir()] == ["keep.txt"]


@pytest.mark.parametrize("dtype,codec", [("uint16", "jpegls"), ("uint8", "jpegls"), ("uint16", "none"),
                                         ("uint16", "jpeg2000-lossless")])
def test_channels_to_dicom_are_optical_paths_of_monochrome_frames(tmp_path, dtype, codec):
    """A 3-channel OME-TIFF (names, excitation wavelengths) to DICOM WSI: MONOCHROME2 frames of the samples'
    own bits, one optical path per channel (epifluorescence at its wavelength, its name as description),
    JPEG-LS lossless (the default; with an Extended Offset Table and an empty Basic one) or uncompressed;
    dciodvfy accepts every instance, pydicom (frames decoded by imagecodecs' CharLS), wsidicom (by optical
    path) and tilewise read every channel of every level exactly."""
    rng = np.random.default_rng(9)
    data = rng.integers(0, np.iinfo(dtype).max, (3, 300, 420), endpoint=True).astype(dtype)  # C Y X
    src = tmp_path / "src.ome.tif"
    meta = {"axes": "CYX", "Channel": {"Name": ["DAPI", "FITC", "Cy5"], "ExcitationWavelength": [358.0, 495.0, 650.0]},
            "PhysicalSizeX": 0.5, "PhysicalSizeY": 0.5}
    with tifffile.TiffWriter(src, ome=True) as tw:
        tw.write(data, metadata=meta, tile=(64, 64), compression="zlib", photometric="minisblack")
    out = tmp_path / "series"
    tilewise.convert(src, out, format="dicom", tile_size=128, codec="auto" if codec == "jpegls" else codec)
    expected = halvings_of_planes(data[np.newaxis, :, np.newaxis], 128)
    instances = sorted(out.iterdir())
    assert [p.name for p in instances] == ["level-0.dcm", "level-1.dcm", "level-2.dcm"]
    for p in instances:
        assert dciodvfy_errors(p) == [], p.name
    ds = pydicom.dcmread(instances[0])
    assert ds.PhotometricInterpretation == "MONOCHROME2" and ds.BitsAllocated == np.dtype(dtype).itemsize * 8
    assert [(p.OpticalPathIdentifier, p.OpticalPathDescription, p.IlluminationWaveLength) for p in ds.OpticalPathSequence] == [
        ("1", "DAPI", 358.0), ("2", "FITC", 495.0), ("3", "Cy5", 650.0)]
    if codec == "jpegls":
        assert ds.file_meta.TransferSyntaxUID == "1.2.840.10008.1.2.4.80"
        lengths = np.frombuffer(ds.ExtendedOffsetTableLengths, "<u8")
        frames = np.stack([imagecodecs.jpegls_decode(f) for f in generate_frames(ds.PixelData, number_of_frames=36)])
        assert len(lengths) == 36 and np.frombuffer(ds.ExtendedOffsetTable, "<u8")[0] == 0
        assert ds.PixelData[:8] == b"\xfe\xff\x00\xe0\x00\x00\x00\x00"  # an empty Basic Offset Table
    elif codec == "jpeg2000-lossless":
        assert ds.file_meta.TransferSyntaxUID == "1.2.840.10008.1.2.4.90"
        frames = np.stack([imagecodecs.jpeg2k_decode(f) for f in generate_frames(ds.PixelData, number_of_frames=36)])
    else:
        frames = ds.pixel_array
    frames = frames.reshape(3, 3, 4, 128, 128)  # optical path, tile row, tile column
    tiles = np.pad(data, ((0, 0), (0, 384 - 300), (0, 512 - 420)), mode="edge").reshape(3, 3, 128, 4, 128).swapaxes(2, 3)
    np.testing.assert_array_equal(frames, tiles)
    with wsidicom.WsiDicom.open(out) as w, tilewise.open(out) as s:
        assert [c.name for c in s.channels] == ["DAPI", "FITC", "Cy5"]
        for k, e in enumerate(expected):
            h, w_ = e.shape[-2:]
            np.testing.assert_array_equal(np.moveaxis(s.read_region((0, 0), (w_, h), level=k), -1, 0), e[0, :, 0])
            for c in range(3):  # wsidicom by optical path identifier (its list of paths has no fixed order)
                theirs = np.asarray(w.read_region((0, 0), k, (w_, h), path=str(c + 1)))
                np.testing.assert_array_equal(theirs, e[0, c, 0], err_msg=f"level {k} path {c + 1}")


def test_channels_of_several_focal_planes_to_dicom_are_spaced_as_the_source_states(tmp_path):
    """A Z-stack of channels (OME-TIFF, 3 focal planes 1.5 um apart by PhysicalSizeZ, as ome-types reads it) to
    DICOM WSI: every level's instance holds each optical path's focal planes in TILED_FULL order with their
    Spacing Between Slices; dciodvfy accepts every instance, and wsidicom (by focal plane and optical path)
    and tilewise read every plane of every level exactly."""
    rng = np.random.default_rng(4)
    data = rng.integers(0, 65535, (3, 2, 200, 260), endpoint=True).astype(np.uint16)  # Z C Y X
    src = tmp_path / "stack.ome.tif"
    with tifffile.TiffWriter(src, ome=True) as tw:
        tw.write(data, metadata={"axes": "ZCYX", "PhysicalSizeX": 0.5, "PhysicalSizeY": 0.5, "PhysicalSizeZ": 1.5,
                                 "Channel": {"Name": ["DAPI", "FITC"]}}, tile=(64, 64), photometric="minisblack")
    stated = ome_types.from_tiff(src).images[0].pixels.physical_size_z
    with tilewise.open(src) as s:
        assert s.shape()[:3] == (1, 2, 3) and s.z_spacing == pytest.approx(stated) == 1.5
    out = tmp_path / "series"
    tilewise.convert(src, out, format="dicom", tile_size=128)
    instances = sorted(out.iterdir())
    assert [p.name for p in instances] == ["level-0.dcm", "level-1.dcm", "level-2.dcm"]
    for p in instances:
        assert dciodvfy_errors(p) == [], p.name
    ds = pydicom.dcmread(instances[0], stop_before_pixels=True)
    assert ds.TotalPixelMatrixFocalPlanes == 3 and ds.NumberOfOpticalPaths == 2
    assert ds.NumberOfFrames == 2 * 3 * 2 * 3  # optical paths x focal planes x tile rows x tile columns
    assert float(ds.SharedFunctionalGroupsSequence[0].PixelMeasuresSequence[0].SpacingBetweenSlices) == 0.0015
    # per plane (z, c): each level's halvings, as the writer forms them
    expected = halvings_of_planes(np.moveaxis(data, 0, 1)[np.newaxis], 128)  # (t, c, z, y, x) per level
    with wsidicom.WsiDicom.open(out) as w, tilewise.open(out) as t:
        assert t.shape()[:3] == (1, 2, 3) and t.z_spacing == pytest.approx(1.5)
        for k, e in enumerate(expected):
            h, w_ = e.shape[-2:]
            focal = sorted(w.levels[k].focal_planes)
            assert focal == pytest.approx([0.0, 1.5, 3.0])
            for z in range(3):
                np.testing.assert_array_equal(np.moveaxis(t.read_region((0, 0), (w_, h), level=k, z=z), -1, 0),
                                              e[0, :, z])
                for c in range(2):
                    theirs = np.asarray(w.read_region((0, 0), k, (w_, h), z=focal[z], path=str(c + 1)))
                    np.testing.assert_array_equal(theirs, e[0, c, z], err_msg=f"level {k} z {z} path {c + 1}")


@pytest.mark.skipif(EXE is None, reason="the tilewise command is not installed next to this Python")
def test_the_command_converts_and_reports_errors_with_its_exit_codes(tmp_path, source):
    path, level0 = source
    out = tmp_path / "cli.tif"
    r = subprocess.run([EXE, "convert", str(path), str(out), "--codec", "deflate", "--tile-size", "128"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    levels, page = tifffile_levels(out)
    assert page.tilewidth == 128
    np.testing.assert_array_equal(levels[0], level0)
    r = subprocess.run([EXE, "convert", str(path), str(tmp_path / "bad.tif"), "--codec", "webp"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "webp" in r.stderr  # bad arguments
    assert not (tmp_path / "bad.tif").exists()
    r = subprocess.run([EXE, "convert", str(path), str(tmp_path / "series"), "--format", "dicom", "--levels", "2"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    frames = [pydicom.dcmread(f, stop_before_pixels=True).NumberOfFrames for f in sorted((tmp_path / "series").iterdir())]
    assert frames == [5 * 4, 3 * 2]
    damaged = damaged_source(tmp_path)
    r = subprocess.run([EXE, "convert", str(damaged), str(tmp_path / "d.tif")], capture_output=True, text=True)
    assert r.returncode == 5 and "level 0 tile (0,1)" in r.stderr  # corrupt file
    assert not (tmp_path / "d.tif").exists()
    r = subprocess.run([EXE, "convert", str(damaged), str(tmp_path / "d.tif"), "--skip-damaged"], capture_output=True, text=True)
    assert r.returncode == 0 and "skipped (written as background)" in r.stderr and "level 0 tile (0,1)" in r.stderr
    assert "1 damaged tiles" in r.stderr and (tmp_path / "d.tif").exists()
