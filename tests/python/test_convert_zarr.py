"""tilewise.convert to OME-Zarr 0.5 (and zstd tiles in TIFFs), checked by readers tilewise did not write:
zarr-python 3 reads every level of every plane (exact: the codecs are lossless), ome-zarr-py's reader and
ome-zarr-models' validation take the NGFF metadata, and the failure paths leave nothing at the output."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import ome_types
import openslide
import pytest
import tifffile
import zarr
from ome_zarr.io import parse_url
from ome_zarr.reader import Reader
from ome_zarr_models.v05.image import Image as OmeZarrImage

import ndpi
import slidegen
import tilewise
from test_convert import EXE, catalogue_slides, damaged_source, halvings, halvings_of_planes, source  # noqa: F401 (source: a fixture)


def zarr_levels(path) -> tuple[zarr.Group, list[np.ndarray]]:
    group = zarr.open_group(str(path), mode="r")
    keys = sorted(group.array_keys(), key=int)
    assert keys == [str(k) for k in range(len(keys))]
    return group, [group[k][...] for k in keys]


@pytest.mark.parametrize("codec,compressor", [("auto", "ZstdCodec"), ("deflate", "GzipCodec"), ("none", None)])
def test_an_rgb_slide_is_three_channels_of_every_level_exactly(tmp_path, source, codec, compressor):
    path, level0 = source
    out = tmp_path / "out.ome.zarr"
    tilewise.convert(path, out, codec=codec, tile_size=128)
    expected = halvings(level0, 128)
    group, levels = zarr_levels(out)
    assert len(levels) == len(expected) == 5
    for k, (got, want) in enumerate(zip(levels, expected)):
        assert got.dtype == np.uint8 and got.shape == (1, 3, 1) + want.shape[:2]
        np.testing.assert_array_equal(np.moveaxis(got[0, :, 0], 0, -1), want, err_msg=f"level {k}")
    array = group["0"]
    assert array.chunks == (1, 3, 1, 128, 128) and array.shards == (1, 3, 1, 9 * 128, 9 * 128)  # 9 x 7 tiles
    assert [type(c).__name__ for c in array.compressors] == ([compressor] if compressor else [])
    ome = group.attrs["ome"]
    assert ome["version"] == "0.5"
    assert [c["label"] for c in ome["omero"]["channels"]] == ["Red", "Green", "Blue"]
    datasets = ome["multiscales"][0]["datasets"]
    for k, (d, want) in enumerate(zip(datasets, expected)):
        scale = d["coordinateTransformations"][0]["scale"]
        assert scale[:3] == [1.0, 1.0, 1.0]
        assert scale[3] == pytest.approx(0.25 * 777 / want.shape[0]) and scale[4] == pytest.approx(0.25 * 1100 / want.shape[1])
    assert [a["name"] for a in ome["multiscales"][0]["axes"]] == ["t", "c", "z", "y", "x"]
    assert ome["multiscales"][0]["axes"][-1]["unit"] == "micrometer"


def test_ome_zarr_readers_take_the_metadata(tmp_path, source):
    """ome-zarr-models validates the group against the OME-Zarr 0.5 schema; ome-zarr-py's reader finds the
    multiscale image with its levels and channel names."""
    path, level0 = source
    out = tmp_path / "out.zarr"
    tilewise.convert(path, out, tile_size=256)
    model = OmeZarrImage.from_zarr(zarr.open_group(str(out), mode="r"))
    assert [d.path for d in model.ome_attributes.multiscales[0].datasets] == ["0", "1", "2", "3"]
    nodes = list(Reader(parse_url(str(out)))())
    assert nodes and [d.shape for d in nodes[0].data] == [(1, 3, 1) + e.shape[:2] for e in halvings(level0, 256)]
    assert nodes[0].metadata["channel_names"] == ["Red", "Green", "Blue"]
    np.testing.assert_array_equal(np.moveaxis(np.asarray(nodes[0].data[0][0, :, 0]), 0, -1), level0)


@pytest.mark.parametrize("dtype", ["uint16", "float32"])
def test_channels_and_focal_planes_are_axes_of_each_level(tmp_path, dtype):
    """A 3-channel, 2-plane OME-TIFF with names and colours: each level is one (T, C, Z, Y, X) array whose
    every plane is the halving of the source's, the omero channels carry the names and colours, the scale of
    z is the planes' spacing (PhysicalSizeZ), and shards hold one plane each (chunks of one channel); an
    OME-TIFF written from it states the same spacing, as ome-types reads it."""
    rng = np.random.default_rng(5)
    data = (rng.normal(500, 200, (2, 3, 300, 420)) if dtype == "float32" else
            rng.integers(0, 65535, (2, 3, 300, 420), endpoint=True)).astype(dtype)  # Z C Y X
    src = tmp_path / "src.ome.tif"
    meta = {"axes": "ZCYX", "Channel": {"Name": ["DAPI", "FITC", "Cy5"], "Color": [-16776961, 16711935, -65281]},
            "PhysicalSizeX": 0.5, "PhysicalSizeY": 0.5, "PhysicalSizeZ": 2.5}
    with tifffile.TiffWriter(src, ome=True) as tw:
        tw.write(data, metadata=meta, tile=(64, 64), compression="zlib", photometric="minisblack")
    out = tmp_path / "out.zarr"
    tilewise.convert(src, out, tile_size=128)
    expected = halvings_of_planes(np.moveaxis(data, 0, 1)[np.newaxis], 128)  # T C Z Y X
    group, levels = zarr_levels(out)
    assert len(levels) == len(expected) == 3
    for k, (got, want) in enumerate(zip(levels, expected)):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want, err_msg=f"level {k}")
    assert group["0"].chunks == (1, 1, 1, 128, 128)
    with tilewise.open(src) as s:
        colours = ["%02X%02X%02X" % tuple(c.color) for c in s.channels]
    channels = group.attrs["ome"]["omero"]["channels"]
    assert [c["label"] for c in channels] == ["DAPI", "FITC", "Cy5"]
    assert [c["color"] for c in channels] == colours
    for k, dataset in enumerate(group.attrs["ome"]["multiscales"][0]["datasets"]):
        scale = dataset["coordinateTransformations"][0]["scale"]
        assert scale[:3] == [1.0, 1.0, 2.5] and scale[3:] == pytest.approx([0.5 * 2 ** k] * 2), k
    OmeZarrImage.from_zarr(group)
    tilewise.convert(src, tmp_path / "out.ome.tif", tile_size=128)
    pixels = ome_types.from_tiff(tmp_path / "out.ome.tif").images[0].pixels
    assert (pixels.size_z, pixels.physical_size_z) == (2, 2.5)


@pytest.mark.parametrize("slide", catalogue_slides() or [None], ids=lambda p: Path(p).parent.name + "/" + Path(p).name if p else "none")
def test_every_format_converts_to_ome_zarr_losslessly(tmp_path, slide):
    """Every readable slide of the catalogue: level 0 of the group, as zarr reads it, is what tilewise reads
    from the source - every channel, focal plane and time point (an RGB slide's RGB rendering)."""
    if slide is None:
        pytest.skip("the corruption catalogue (TILEWISE_CATALOGUE_DIR, built by scripts/test.sh) is not set")
    with tilewise.open(slide) as s:
        w, h = s.dimensions
        tilewise.convert(s, tmp_path / "out.zarr", levels=1, tile_size=128)
        _, (got,) = zarr_levels(tmp_path / "out.zarr")
        t_size, _, z_size = got.shape[:3]
        for t in range(t_size):
            for z in range(z_size):
                np.testing.assert_array_equal(np.moveaxis(got[t, :, z], 0, -1),
                                              s.read_region((0, 0), (w, h), z=z, t=t), err_msg=f"z {z} t {t}")


def test_rgb_focal_planes_are_the_z_axis_of_ome_zarr_and_ome_tiff(tmp_path):
    """An NDPI with focal planes above and below its nominal one: OME-Zarr and OME-TIFF hold each plane's RGB
    (as tilewise reads it at that z), a generic TIFF the default plane."""
    src = tmp_path / "z.ndpi"
    ndpi.write_ndpi(src, slidegen.tissue_image(1024, 768, seed=4), focal_planes=(-1, 1), planes_at_every_level=True)
    with tilewise.open(src) as s:
        assert s.shape(0) == (1, 3, 3, 768, 1024)
        planes = [s.read_region((0, 0), s.dimensions, z=z) for z in range(3)]
        default = s.read_region((0, 0), s.dimensions)
    assert not np.array_equal(planes[0], planes[2])
    tilewise.convert(src, tmp_path / "z.zarr", tile_size=128)
    _, levels = zarr_levels(tmp_path / "z.zarr")
    assert levels[0].shape == (1, 3, 3, 768, 1024)
    for z in range(3):
        np.testing.assert_array_equal(np.moveaxis(levels[0][0, :, z], 0, -1), planes[z], err_msg=f"zarr z {z}")
    tilewise.convert(src, tmp_path / "z.ome.tif", tile_size=128, codec="deflate")
    with tifffile.TiffFile(tmp_path / "z.ome.tif") as tf:
        assert tf.series[0].axes == "ZYXS"
        level0 = tf.series[0].levels[0].asarray()
    for z in range(3):
        np.testing.assert_array_equal(level0[z], planes[z], err_msg=f"OME-TIFF z {z}")
    tilewise.convert(src, tmp_path / "z.tif", tile_size=128, codec="deflate")
    with tifffile.TiffFile(tmp_path / "z.tif") as tf:
        np.testing.assert_array_equal(tf.series[0].levels[0].asarray(), default)


def test_what_ome_zarr_cannot_take_is_refused_and_nothing_is_left(tmp_path, source):
    path, _ = source
    with pytest.raises(tilewise.InvalidArgumentError, match="Zarr"):
        tilewise.convert(path, tmp_path / "jpeg.zarr", codec="jpeg")
    full = tmp_path / "full.zarr"
    full.mkdir()
    (full / "keep").write_text("x")
    with pytest.raises(tilewise.InvalidArgumentError, match="not empty"):
        tilewise.convert(path, full)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full.zarr"]
    assert [p.name for p in full.iterdir()] == ["keep"]


def test_a_damaged_source_tile_stops_the_conversion_and_leaves_no_group(tmp_path):
    src = damaged_source(tmp_path)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    with pytest.raises(tilewise.CorruptError, match=r"damaged\.tif.*level 0 tile \(0,1\)"):
        tilewise.convert(src, out_dir / "out.zarr")
    assert list(out_dir.iterdir()) == []


def test_zstd_tiles_in_a_tiff_read_exactly_in_tifffile_and_openslide(tmp_path, source):
    path, level0 = source
    out = tmp_path / "zstd.tif"
    tilewise.convert(path, out, codec="zstd", tile_size=256)
    with tifffile.TiffFile(out) as tf:
        assert tf.pages[0].compression == 50000
        levels = [lv.asarray() for lv in tf.series[0].levels]
    for k, (got, want) in enumerate(zip(levels, halvings(level0, 256))):
        np.testing.assert_array_equal(got, want, err_msg=f"level {k}")
    with openslide.OpenSlide(str(out)) as o:
        np.testing.assert_array_equal(np.asarray(o.read_region((0, 0), 0, o.dimensions))[..., :3], level0)


@pytest.mark.skipif(EXE is None, reason="the tilewise command is not installed next to this Python")
def test_the_command_writes_ome_zarr(tmp_path, source):
    path, level0 = source
    out = tmp_path / "cli.zarr"
    run = subprocess.run([EXE, "convert", str(path), str(out), "--levels", "2"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    _, levels = zarr_levels(out)
    assert len(levels) == 2
    np.testing.assert_array_equal(np.moveaxis(levels[0][0, :, 0], 0, -1), level0)
    run = subprocess.run([EXE, "convert", str(path), str(tmp_path / "j.zarr"), "--codec", "jpeg"],
                         capture_output=True, text=True)
    assert run.returncode != 0 and "Zarr" in run.stderr
    assert not (tmp_path / "j.zarr").exists()
    shutil.rmtree(out)
