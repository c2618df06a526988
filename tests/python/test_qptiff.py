"""Akoya QPTIFF (Vectra Polaris, PhenoCycler): channels with their names and colours, every channel's
pyramid, thumbnail, overview and label, against tifffile's QPI reader on the same bytes."""

from __future__ import annotations

import numpy as np
import pytest
import tifffile

import qptiff
import slidegen
import tilewise

NAMES = ["DAPI", "CD8", "PanCK", "FOXP3"]
COLORS = [(0, 0, 255), (255, 0, 0), (0, 255, 0), (255, 255, 0)]


def fluorescence(dtype, seed=0):
    rng = np.random.default_rng(seed)
    top = 255 if dtype == np.uint8 else 65535
    return rng.integers(0, top, (4, 300, 410), dtype=dtype)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
@pytest.mark.parametrize("compression", ["lzw", "zlib", None])
def test_every_channel_of_every_level_equals_tifffile(tmp_path, dtype, compression):
    path = tmp_path / "slide.qptiff"
    rgb = slidegen.tissue_image(96, 64, seed=1)
    qptiff.write_qptiff(path, fluorescence(dtype), names=NAMES, colors=COLORS, compression=compression,
                        thumbnail=rgb, macro=rgb[:, :80], label=rgb[:40, :40])
    slide = tilewise.open(path)
    assert slide.format == "qptiff" and not slide.is_rgb and slide.dtype == np.dtype(dtype)
    assert [(c.name, c.color) for c in slide.channels] == list(zip(NAMES, COLORS))
    assert slide.mpp == pytest.approx((0.5, 0.5))
    assert slide.properties["qptiff.Channel[2].Name"] == "PanCK"
    assert slide.properties["openslide.objective-power"] == "20"
    with tifffile.TiffFile(path) as tf:
        series = tf.series[0]
        assert len(series.levels) == slide.level_count == 3
        for level, ref_level in enumerate(series.levels):
            ref = ref_level.asarray()  # (C, h, w)
            assert slide.shape(level) == (1, 4, 1, *ref.shape[1:])
            got = slide.read_region((0, 0), (ref.shape[2], ref.shape[1]), level=level)
            np.testing.assert_array_equal(np.moveaxis(got, -1, 0), ref, err_msg=f"level {level}")
        names = {s.name: s.asarray() for s in tf.series[1:]}
    assert set(slide.associated_images) == {"thumbnail", "macro", "label"}
    np.testing.assert_array_equal(slide.associated_images["thumbnail"], names["Thumbnail"])
    np.testing.assert_array_equal(slide.associated_images["macro"], names["Macro"])
    np.testing.assert_array_equal(slide.associated_images["label"], names["Label"])
    # One channel of a patch, and the RGB rendering the drop-ins show (channel 0 as grey).
    np.testing.assert_array_equal(slide.read_region((100, 50), (64, 32), c=2)[..., 0],
                                  tf_level0(path)[2, 50:82, 100:164])


def tf_level0(path):
    with tifffile.TiffFile(path) as tf:
        return tf.series[0].asarray()


def test_brightfield_qptiff_is_an_rgb_slide(tmp_path):
    path = tmp_path / "bf.qptiff"
    image = slidegen.tissue_image(400, 300, seed=3)
    qptiff.write_qptiff(path, image, compression="zlib", levels=2)
    slide = tilewise.open(path)
    assert slide.format == "qptiff" and slide.is_rgb and slide.level_count == 2
    np.testing.assert_array_equal(slide.read_region((0, 0), (400, 300)), image)
    np.testing.assert_array_equal(slide.read_region((0, 0), (200, 150), level=1), image[::2, ::2])


def test_a_reduced_resolution_missing_channels_is_left_out_with_a_warning(tmp_path):
    path = tmp_path / "cut.qptiff"
    data = fluorescence(np.uint8)
    qptiff.write_qptiff(path, data, names=NAMES, levels=2)
    with tifffile.TiffFile(path) as tf:  # keep level 0 and one channel of level 1
        pages = [p.asarray() for p in tf.pages]
        descriptions = [p.description for p in tf.pages]
    with tifffile.TiffWriter(path, bigtiff=True) as tw:
        for data_, desc in list(zip(pages, descriptions))[:5]:
            tw.write(data_, tile=(128, 128), description=desc, software="PerkinElmer-QPI", metadata=None,
                     photometric="minisblack")
    slide = tilewise.open(path)
    assert slide.level_count == 1 and slide.shape() == (1, 4, 1, 300, 410)
    assert any("holds 1 of the 4 channels: left out" in w for w in slide.warnings)
