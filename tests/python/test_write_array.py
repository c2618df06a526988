"""tilewise.write_array: masks, heatmaps and model outputs held as NumPy or dask arrays written as pyramids
(OME-TIFF, OME-Zarr, DICOM WSI), read back by tifffile, zarr, pydicom/wsidicom and dciodvfy: every level is
the halving (or, with downsample="nearest", the subsampling) of the array, the pixel size is the one given
or the source slide's scaled to the array, and a failing array leaves nothing behind."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest
import tifffile
import wsidicom
import zarr

import tilewise
from test_convert import dciodvfy_errors, halvings, halvings_of_planes, source  # noqa: F401 (source: a fixture)
from test_convert_zarr import zarr_levels
from test_ome_planes import reference_levels


def test_a_mask_is_an_ome_tiff_pyramid_of_its_halvings(tmp_path):
    rng = np.random.default_rng(1)
    mask = (rng.random((700, 900)) > 0.5).astype(np.uint8) * 255
    out = tmp_path / "mask.ome.tif"
    tilewise.write_array(mask, out, mpp=0.5, tile_size=128, name="tumour mask")
    expected = halvings(mask, 128)
    got = reference_levels(out)
    assert len(got) == len(expected) == 4
    for k, (g, e) in enumerate(zip(got, expected)):
        np.testing.assert_array_equal(g[0, 0, 0], e, err_msg=f"level {k}")
    with tifffile.TiffFile(out) as tf:
        assert "tumour mask" in tf.ome_metadata
        assert tf.pages[0].resolution[0] == pytest.approx(1e4 / 0.5)  # pixels per cm


def test_a_dask_heatmap_takes_the_slides_mpp_scaled_to_its_size(tmp_path, source):
    """A float32 heatmap computed lazily by dask, at a fraction of the slide's size, as OME-Zarr: the scale
    is the slide's mpp times the ratio of their sizes, and every level's values are the exact means."""
    path, level0 = source  # 1100 x 777 at 0.25
    rng = np.random.default_rng(2)
    values = rng.random((777 // 4, 1100 // 4)).astype(np.float32)
    heat = da.from_array(values, chunks=(50, 275))
    out = tmp_path / "heat.zarr"
    tilewise.write_array(heat, out, like=path, tile_size=64)
    group, levels = zarr_levels(out)
    expected = halvings_of_planes(values[np.newaxis, np.newaxis, np.newaxis], 64)
    assert len(levels) == len(expected)
    for k, (g, e) in enumerate(zip(levels, expected)):
        assert g.dtype == np.float32
        np.testing.assert_array_equal(g, e, err_msg=f"level {k}")
    scale = group.attrs["ome"]["multiscales"][0]["datasets"][0]["coordinateTransformations"][0]["scale"]
    assert scale[3] == pytest.approx(0.25 * 777 / (777 // 4)) and scale[4] == pytest.approx(0.25 * 1100 / (1100 // 4))


@pytest.mark.parametrize("output", ["labels.zarr", "labels.ome.tif"])
def test_nearest_keeps_a_label_masks_values(tmp_path, output):
    labels = np.random.default_rng(3).integers(0, 7, (520, 390), dtype=np.uint16)
    tilewise.write_array(labels, tmp_path / output, downsample="nearest", tile_size=64)
    levels = zarr_levels(tmp_path / output)[1] if output.endswith("zarr") else reference_levels(tmp_path / output)
    want = labels
    for k, got in enumerate(levels):
        np.testing.assert_array_equal(got[0, 0, 0], want, err_msg=f"level {k}")
        want = want[::2, ::2]
    assert len(levels) == 5  # 520 -> 260 -> 130 -> 65 -> 33 rows: the last fits one tile
    assert set(np.unique(levels[-1])) <= set(range(7))


def test_channels_of_an_array_are_planes_with_their_names(tmp_path):
    data = np.random.default_rng(4).integers(0, 4096, (300, 200, 4), dtype=np.uint16)
    out = tmp_path / "cells.ome.tif"
    tilewise.write_array(data, out, channel_names=["DAPI", "CD3", "CD8", "PanCK"], tile_size=128)
    got = reference_levels(out)[0]
    np.testing.assert_array_equal(np.moveaxis(got[0, :, 0], 0, -1), data)
    with tilewise.open(out) as s:
        assert [c.name for c in s.channels] == ["DAPI", "CD3", "CD8", "PanCK"]
        np.testing.assert_array_equal(s.read_region((0, 0), (200, 300)), data)


def test_an_rgb_array_is_a_valid_dicom_series(tmp_path):
    """(h, w, 3) of uint8 is an RGB image: as DICOM WSI (uncompressed frames) it validates and wsidicom reads
    the array back exactly."""
    rgb = np.random.default_rng(5).integers(0, 256, (300, 400, 3), dtype=np.uint8)
    out = tmp_path / "overlay"
    tilewise.write_array(rgb, out, format="dicom", codec="none", mpp=0.25, tile_size=128)
    instances = sorted(out.iterdir())
    assert [p.name for p in instances] == ["level-0.dcm", "level-1.dcm", "level-2.dcm"]
    for p in instances:
        assert dciodvfy_errors(p) == []
    with wsidicom.WsiDicom.open(out) as w:
        np.testing.assert_array_equal(np.asarray(w.read_region((0, 0), 0, (400, 300)).convert("RGB")), rgb)
        assert w.mpp.width == pytest.approx(0.25)


def test_what_cannot_be_written_is_refused_and_a_failing_array_leaves_nothing(tmp_path):
    with pytest.raises(tilewise.InvalidArgumentError, match="float64"):
        tilewise.write_array(np.zeros((10, 10)), tmp_path / "f.zarr")
    with pytest.raises(tilewise.InvalidArgumentError, match="shape"):
        tilewise.write_array(np.zeros((2, 10, 10, 1), np.uint8), tmp_path / "s.zarr")
    with pytest.raises(tilewise.InvalidArgumentError, match="channel names"):
        tilewise.write_array(np.zeros((10, 10, 2), np.uint8), tmp_path / "n.zarr", channel_names=["a"])
    with pytest.raises(tilewise.InvalidArgumentError, match="name the output"):
        tilewise.write_array(np.zeros((10, 10), np.uint8), tmp_path / "grey.tif")

    class Failing:
        """An array whose second band cannot be computed."""
        shape, dtype = (600, 300), np.dtype(np.uint8)

        def __getitem__(self, rows):
            if rows.start > 0:
                raise OSError("the model's output is gone")
            return np.zeros((rows.stop - rows.start, 300), np.uint8)

    for output in ("failing.zarr", "failing.ome.tif"):
        with pytest.raises(OSError, match="output is gone"):
            tilewise.write_array(Failing(), tmp_path / output, tile_size=128)
    assert list(tmp_path.iterdir()) == []
