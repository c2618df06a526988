"""OME-TIFF channels, focal planes and time points at their own sample type, against tifffile on the same bytes:
every plane of every level, channel selections, metadata, and the errors a caller or a damaged file meets."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import tifffile

import tilewise


def write_planes(path, data, axes, *, levels=3, compression="zlib", tile=(64, 64), metadata=None):
    """An OME-TIFF of `data` (axes e.g. "TCZYX"), each plane's pyramid in its SubIFDs, as tifffile writes them."""
    meta = {"axes": axes, **(metadata or {})}
    opts = dict(tile=tile, compression=compression, photometric="minisblack" if not axes.endswith("S") else "rgb")
    with tifffile.TiffWriter(path, ome=True) as tw:
        tw.write(data, subifds=levels - 1, metadata=meta, **opts)
        for level in range(1, levels):
            step = 2**level
            tw.write(data[..., ::step, ::step] if not axes.endswith("S") else data[..., ::step, ::step, :],
                     subfiletype=1, **opts)


def random_data(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return rng.normal(0, 1000, shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)


def as_tczyx(page_series):
    """A tifffile series (or level of one) as decoded, axes moved to (T, C, Z, Y, X)."""
    arr, axes = page_series.asarray(), page_series.axes
    for a in "TCZ":
        if a not in axes:
            arr, axes = arr[np.newaxis], a + axes
    return np.transpose(arr, [axes.index(a) for a in "TCZYX"])


def reference_levels(path):
    """Every level of the first series as tifffile decodes it, as (T, C, Z, Y, X)."""
    with tifffile.TiffFile(path) as tf:
        return [as_tczyx(level) for level in tf.series[0].levels]


def assert_every_plane(slide, levels):
    for level, ref in enumerate(levels):
        t_size, c_size, z_size, h, w = ref.shape
        assert slide.shape(level) == ref.shape
        for t in range(t_size):
            for z in range(z_size):
                got = slide.read_region((0, 0), (w, h), level=level, z=z, t=t)
                want = np.moveaxis(ref[t, :, z], 0, -1)
                assert got.dtype == ref.dtype and got.shape == want.shape
                np.testing.assert_array_equal(got, want, err_msg=f"level {level} z {z} t {t}")


@pytest.mark.parametrize("dtype", ["uint8", "uint16", "int16", "uint32", "float32"])
@pytest.mark.parametrize("compression", ["zlib", "zstd", None])
def test_every_plane_of_every_level_equals_tifffile(tmp_path, dtype, compression):
    path = tmp_path / "planes.ome.tif"
    write_planes(path, random_data((2, 3, 2, 150, 200), dtype), "TCZYX", compression=compression)
    slide = tilewise.open(path)
    assert slide.format == "ome-tiff"
    assert slide.axes == "tczyx" and slide.shape() == (2, 3, 2, 150, 200)
    assert slide.dtype == np.dtype(dtype) and not slide.is_rgb
    assert_every_plane(slide, reference_levels(path))


@pytest.mark.parametrize("axes", ["ZCYX", "CTZYX", "TZCYX", "ZTYX"])
def test_dimension_orders_map_each_directory_to_its_plane(tmp_path, axes):
    shape = {"T": 3, "C": 2, "Z": 4, "Y": 70, "X": 90}
    path = tmp_path / "order.ome.tif"
    write_planes(path, random_data([shape[a] for a in axes], "uint16", seed=3), axes, levels=2)
    slide = tilewise.open(path)
    assert slide.shape() == tuple(shape[a] if a in axes else 1 for a in "TCZ") + (70, 90)
    assert_every_plane(slide, reference_levels(path))


def write_flat_pyramid(path, images, *, factor=2, levels=3, tile=(64, 64)):
    """Flat pyramids (Bio-Formats 5's and Faas's layout): for each (data, axes, name) of `images`, one OME
    Image per level, each level's planes in the directories after the level before's, no SubIFDs."""
    with tifffile.TiffWriter(path, ome=True, bigtiff=True) as tw:
        for data, axes, name in images:
            for level in range(levels):
                step = factor**level
                tw.write(data[..., ::step, ::step], metadata={"axes": axes, "Name": name}, tile=tile,
                         compression="zlib", photometric="minisblack")


def tifffile_series_tczyx(path):
    """Every series of the file as tifffile decodes it, as (T, C, Z, Y, X)."""
    with tifffile.TiffFile(path) as tf:
        return [as_tczyx(series) for series in tf.series]


@pytest.mark.parametrize("factor", [2, 4])
def test_a_flat_pyramid_is_one_image_of_several_levels(tmp_path, factor):
    """tifffile reads each level of a flat pyramid as a series of its own (the OME Image per level): they are
    tilewise's levels of one image, every plane equal."""
    data = random_data((2, 3, 300, 500), "uint16", seed=3)  # (Z, C, Y, X)
    path = tmp_path / "flat.ome.tif"
    write_flat_pyramid(path, [(data, "ZCYX", "slide")], factor=factor)
    series = tifffile_series_tczyx(path)
    assert len(series) == 3
    s = tilewise.open(path)
    assert s.scenes == ()
    assert [lv.dimensions for lv in s.levels] == [(r.shape[4], r.shape[3]) for r in series]
    assert s.levels[1].downsample == pytest.approx(factor, rel=0.02)
    assert_every_plane(s, series)


def test_flat_pyramids_of_several_scenes_keep_their_scenes(tmp_path):
    """An image that is not a reduction of the one before (other channels) starts a scene, with its own
    flat levels; OpenOptions' scene picks it."""
    first = random_data((3, 256, 384), "uint16", seed=4)
    second = random_data((2, 200, 300), "uint16", seed=5)
    path = tmp_path / "scenes.ome.tif"
    write_flat_pyramid(path, [(first, "CYX", "first"), (second, "CYX", "second")], levels=2)
    series = tifffile_series_tczyx(path)
    assert len(series) == 4
    s0 = tilewise.open(path)
    assert [scene.name for scene in s0.scenes] == ["first", "second"]
    assert_every_plane(s0, series[:2])
    s1 = tilewise.open(path, scene=1)
    assert_every_plane(s1, series[2:])


def test_images_of_another_factor_on_one_axis_stay_scenes(tmp_path):
    data = random_data((2, 256, 256), "uint8", seed=6)
    path = tmp_path / "two.ome.tif"
    with tifffile.TiffWriter(path, ome=True) as tw:
        tw.write(data, metadata={"axes": "CYX", "Name": "a"}, photometric="minisblack")
        tw.write(data[:, ::2, ::4], metadata={"axes": "CYX", "Name": "b"}, photometric="minisblack")
    s = tilewise.open(path)
    assert len(s.levels) == 1 and [scene.name for scene in s.scenes] == ["a", "b"]


def test_channel_selections_regions_and_fill(tmp_path):
    path = tmp_path / "sel.ome.tif"
    data = random_data((4, 3, 300, 260), "uint16", seed=5)  # C Z Y X
    write_planes(path, data, "CZYX")
    slide = tilewise.open(path)
    ref = reference_levels(path)
    for c in (2, [3, 0], (1, 1), [0, 1, 2, 3]):
        picked = [c] if isinstance(c, int) else list(c)
        got = slide.read_region((40, 24), (100, 70), level=1, c=c, z=2)
        want = np.moveaxis(ref[1][0, picked, 2, 12:82, 20:120], 0, -1)
        np.testing.assert_array_equal(got, want, err_msg=f"channels {c}")
    # Outside the level: 0, in every channel.
    got = slide.read_region((250, 290), (30, 20), c=[1, 3], z=1)
    want = np.zeros((20, 30, 2), np.uint16)
    want[:10, :10] = np.moveaxis(data[[1, 3], 1, 290:, 250:], 0, -1)
    np.testing.assert_array_equal(got, want)
    # Into a caller's array, and in the level's own frame.
    out = np.empty((70, 100, 2), np.uint16)
    assert slide.read_region((40, 24), (100, 70), level=1, c=[3, 0], z=2, out=out) is out
    np.testing.assert_array_equal(out, slide.read_level_region((20, 12), (100, 70), level=1, c=[3, 0], z=2))


def test_batches_of_channels(tmp_path):
    """read_regions with c/z/t: (B, h, w, C) batches of the sample type, equal to single reads, in order or
    shuffled, on any number of workers; a region past the size limit or a device read is refused."""
    path = tmp_path / "batches.ome.tif"
    data = random_data((2, 3, 300, 260), "uint16", seed=9)  # Z C Y X
    write_planes(path, data, "ZCYX", levels=2)
    slide = tilewise.open(path)
    rng = np.random.default_rng(4)
    locations = [(int(x), int(y)) for x, y in rng.integers(-20, 250, (37, 2))]
    for workers, shuffle in ((1, False), (4, True)):
        batches = slide.read_regions(locations, (48, 40), level=1, batch_size=8, num_workers=workers,
                                     shuffle=shuffle, seed=3, c=[2, 0], z=1)
        seen = []
        for batch in batches:
            assert batch.dtype == np.uint16 and batch.shape[1:] == (40, 48, 2)
            for k, i in enumerate(batches.last_indices):
                want = slide.read_region(locations[i], (48, 40), level=1, c=[2, 0], z=1)
                np.testing.assert_array_equal(batch[k], want)
                seen.append(i)
        assert sorted(seen) == list(range(len(locations))) and (seen != sorted(seen)) == shuffle
    whole = next(iter(slide.read_regions(locations[:4], (32, 32), batch_size=4, z=0)))
    assert whole.shape == (4, 32, 32, 3)
    np.testing.assert_array_equal(whole[1], slide.read_region(locations[1], (32, 32), z=0))
    with pytest.raises(tilewise.UnsupportedError, match="host memory only"):
        slide.read_regions(locations, (32, 32), c=0, device="cuda")


def write_set(folder, data, *, binary_only: bool, levels: int = 2):
    """A multi-file OME-TIFF set of `data` (C, Z, Y, X): one file per channel (its focal planes, each with a
    SubIFD pyramid), the full OME-XML in the first file and BinaryOnly XML pointing at it in the others (or
    the full XML in every file)."""
    import uuid

    channels, zs, h, w = data.shape
    names = [f"set_c{c}.ome.tif" for c in range(channels)]
    ids = [f"urn:uuid:{uuid.uuid4()}" for _ in names]
    tiffdata = "".join(f'<TiffData FirstC="{c}" FirstZ="0" FirstT="0" IFD="0" PlaneCount="{zs}">'
                       f'<UUID FileName="{names[c]}">{ids[c]}</UUID></TiffData>' for c in range(channels))
    full = ('<?xml version="1.0" encoding="UTF-8"?><OME xmlns="http://www.openmicroscopy.org/Schemas/OME/2016-06" '
            f'UUID="{{uuid}}"><Image ID="Image:0" Name="set"><Pixels ID="Pixels:0" DimensionOrder="XYZCT" '
            f'Type="uint16" SizeX="{w}" SizeY="{h}" SizeZ="{zs}" SizeC="{channels}" SizeT="1">'
            + "".join(f'<Channel ID="Channel:0:{c}" Name="ch{c}" SamplesPerPixel="1"/>' for c in range(channels))
            + tiffdata + '</Pixels></Image></OME>')
    opts = dict(tile=(64, 64), compression="zlib", photometric="minisblack", metadata=None)
    for c in range(channels):
        if c == 0 or not binary_only:
            xml = full.replace("{uuid}", ids[c])
        else:
            xml = ('<?xml version="1.0" encoding="UTF-8"?><OME xmlns="http://www.openmicroscopy.org/Schemas/OME/2016-06" '
                   f'UUID="{ids[c]}"><BinaryOnly MetadataFile="{names[0]}" UUID="{ids[0]}"/></OME>')
        with tifffile.TiffWriter(folder / names[c]) as tw:
            for z in range(zs):
                tw.write(data[c, z], subifds=levels - 1, description=xml if z == 0 else None, **opts)
                for level in range(1, levels):
                    tw.write(data[c, z, ::2 ** level, ::2 ** level], subfiletype=1, **opts)
    return [folder / n for n in names]


@pytest.mark.parametrize("binary_only", [False, True], ids=["full-xml", "binary-only"])
def test_multi_file_sets_read_every_plane_from_its_file(tmp_path, binary_only):
    data = random_data((3, 2, 200, 260), "uint16", seed=11)
    files = write_set(tmp_path, data, binary_only=binary_only)
    with tifffile.TiffFile(files[0]) as tf:  # tifffile's reading of the set, for the same bytes
        reference = tf.series[0].asarray()
    assert reference.shape == (3, 2, 200, 260) and np.array_equal(reference, data)
    for opened in files:  # any member opens the whole set
        slide = tilewise.open(opened)
        assert slide.shape(0) == (1, 3, 2, 200, 260) and [c.name for c in slide.channels] == ["ch0", "ch1", "ch2"]
        for z in range(2):
            np.testing.assert_array_equal(np.moveaxis(slide.read_region((0, 0), (260, 200), z=z), -1, 0), data[:, z])
        np.testing.assert_array_equal(slide.read_region((0, 0), (130, 100), level=1, c=2, z=1)[..., 0],
                                      data[2, 1, ::2, ::2])
    with open(files[0], "rb") as f, pytest.raises(tilewise.UnsupportedError, match="has no folder to find it in"):
        tilewise.open(f)
    files[2].unlink()
    with pytest.raises(tilewise.NotFoundError, match=r'plane \(channel 2, z 0, t 0\).*file "set_c2.ome.tif" of the multi-file'):
        tilewise.open(files[0])


def test_a_set_naming_a_file_in_another_folder_is_refused(tmp_path):
    data = random_data((2, 1, 64, 64), "uint16", seed=12)
    files = write_set(tmp_path, data, binary_only=False, levels=1)
    raw = files[0].read_bytes().replace(b'FileName="set_c1.ome.tif"', b'FileName="../c1.ome.tiff"')
    files[0].write_bytes(raw)
    with pytest.raises(tilewise.CorruptError, match=r'names "\.\./c1\.ome\.tiff", not a file name in the set'):
        tilewise.open(files[0])


def test_the_cache_and_many_threads_give_the_same_samples(tmp_path):
    path = tmp_path / "threads.ome.tif"
    data = random_data((3, 2, 256, 256), "uint16", seed=7)  # T C Y X
    write_planes(path, data, "TCYX", levels=1, tile=(32, 32))
    slide = tilewise.open(path)
    rng = np.random.default_rng(1)
    jobs = [(int(rng.integers(0, 200)), int(rng.integers(0, 200)), int(rng.integers(0, 3)), int(rng.integers(0, 2)))
            for _ in range(400)]

    def read(job):
        x, y, t, c = job
        got = slide.read_region((x, y), (56, 56), c=c, t=t, use_cache=bool(x % 2))
        return np.array_equal(got[..., 0], data[t, c, y:y + 56, x:x + 56])

    with ThreadPoolExecutor(16) as pool:
        assert all(pool.map(read, jobs))


def test_channel_metadata(tmp_path):
    path = tmp_path / "meta.ome.tif"
    meta = {"Channel": {"Name": ["DAPI", "FITC"], "Color": [-16776961, 16711935],
                        "EmissionWavelength": [461.0, 520.0], "EmissionWavelengthUnit": ["nm", "nm"],
                        "ExcitationWavelength": [0.405, 0.488], "ExcitationWavelengthUnit": ["\u00b5m", "\u00b5m"]},
            "Plane": {"ExposureTime": [10.0, 20.0], "ExposureTimeUnit": ["ms", "ms"]}}
    write_planes(path, np.zeros((2, 64, 64), np.uint8), "CYX", levels=1, metadata=meta)
    slide = tilewise.open(path)
    assert slide.channels == (
        tilewise.Channel("DAPI", (255, 0, 0), pytest.approx(405.0), 461.0, pytest.approx(0.01)),
        tilewise.Channel("FITC", (0, 255, 0), pytest.approx(488.0), 520.0, pytest.approx(0.02)),
    )


def test_interleaved_samples_that_are_not_8_bit_rgb_are_channels(tmp_path):
    path = tmp_path / "rgb16.ome.tif"
    data = random_data((120, 140, 3), "uint16", seed=9)
    write_planes(path, data, "YXS", levels=2)
    slide = tilewise.open(path)
    assert not slide.is_rgb and slide.shape() == (1, 3, 1, 120, 140) and slide.dtype == np.uint16
    np.testing.assert_array_equal(slide.read_region((0, 0), (140, 120)), data)
    np.testing.assert_array_equal(slide.read_region((10, 20), (30, 40), c=[2, 1])[..., 0], data[20:60, 10:40, 2])
    np.testing.assert_array_equal(slide.read_region((0, 0), (70, 60), level=1, c=1)[..., 0], data[::2, ::2, 1])


def test_brightfield_rgb_stays_rgb_and_channels_are_its_samples(tmp_path):
    path = tmp_path / "rgb.ome.tif"
    data = random_data((120, 140, 3), "uint8", seed=2)
    write_planes(path, data, "YXS", levels=1, compression="zlib")
    slide = tilewise.open(path)
    assert slide.is_rgb and slide.dtype == np.uint8 and [c.name for c in slide.channels] == ["R", "G", "B"]
    np.testing.assert_array_equal(slide.read_region((0, 0), (140, 120)), data)
    np.testing.assert_array_equal(slide.read_region((5, 6), (20, 10), c=[2, 0]), data[6:16, 5:25][..., [2, 0]])


def test_rgb_rendering_of_16_bit_grey_is_its_high_byte(tmp_path):
    path = tmp_path / "grey16.ome.tif"
    data = random_data((100, 120), "uint16", seed=4)
    write_planes(path, data, "YX", levels=1)
    slide = tilewise.open(path)
    np.testing.assert_array_equal(slide.read_region((0, 0), (120, 100))[..., 0], data)
    rgb = slide.read_region((0, 0), (120, 100), c="rgb")
    np.testing.assert_array_equal(rgb, np.repeat((data >> 8).astype(np.uint8)[..., None], 3, axis=2))
    # The OpenSlide drop-in shows the same rendering.
    from tilewise import openslide as ts

    shown = np.asarray(ts.OpenSlide(str(path)).read_region((0, 0), 0, (120, 100)))
    np.testing.assert_array_equal(shown[..., :3], rgb)


def test_callers_mistakes_name_the_file(tmp_path):
    path = tmp_path / "err.ome.tif"
    write_planes(path, random_data((2, 3, 40, 40), "uint16"), "ZCYX", levels=1)
    slide = tilewise.open(path)
    name = re.escape(str(path))
    with pytest.raises(tilewise.InvalidArgumentError, match="channel 3 does not exist"):
        slide.read_region((0, 0), (8, 8), c=3)
    with pytest.raises(tilewise.InvalidArgumentError, match=name + ".*z 2, t 0 does not exist"):
        slide.read_region((0, 0), (8, 8), z=2)
    with pytest.raises(tilewise.InvalidArgumentError, match="z must be 0 .or None. and t 0"):
        slide.read_region((0, 0), (8, 8), c="rgb", z=1)
    with pytest.raises(tilewise.InvalidArgumentError, match="out must be"):
        slide.read_region((0, 0), (8, 8), out=np.empty((8, 8, 3), np.uint8))
    with pytest.raises(tilewise.InvalidArgumentError, match="level 4 does not exist"):
        slide.read_region((0, 0), (8, 8), level=4, c=0)


def replace_in_xml(path, old: bytes, new: bytes):
    """Rewrites the OME-XML in place, keeping its length (the directories after it keep their offsets)."""
    data = path.read_bytes()
    assert data.count(old) == 1, old
    new = new.ljust(len(old))
    assert len(new) == len(old)
    path.write_bytes(data.replace(old, new))


def test_damaged_or_foreign_plane_tables_are_refused_clearly(tmp_path):
    path = tmp_path / "bad.ome.tif"
    write_planes(path, random_data((3, 40, 40), "uint8"), "ZYX", levels=1)
    replace_in_xml(path, b'PlaneCount="3"', b'PlaneCount="7"')
    with pytest.raises(tilewise.CorruptError, match="PlaneCount=7 runs past the image's 3 planes"):
        tilewise.open(path)
    write_planes(path, random_data((3, 40, 40), "uint8"), "ZYX", levels=1)
    replace_in_xml(path, b'PlaneCount="3"', b'PlaneCount="2"')
    with pytest.raises(tilewise.CorruptError, match="no directory for channel 0 z 2 t 0"):
        tilewise.open(path)
    write_planes(path, random_data((3, 40, 40), "uint8"), "ZYX", levels=1)
    replace_in_xml(path, b'Type="uint8"', b'Type="int16"')
    with pytest.raises(tilewise.CorruptError, match="OME-XML says int16 samples"):
        tilewise.open(path)
    xml = ('<?xml version="1.0"?><OME xmlns="http://www.openmicroscopy.org/Schemas/OME/2016-06"><Image ID="Image:0">'
           '<Pixels ID="Pixels:0" DimensionOrder="XYZCT" Type="uint8" SizeX="40" SizeY="40" SizeZ="3" SizeC="1" '
           'SizeT="1"><Channel ID="Channel:0:0" SamplesPerPixel="1"/><TiffData IFD="0" PlaneCount="2"/>'
           '<TiffData FirstZ="2" IFD="0"><UUID FileName="other.ome.tif">urn:uuid:1</UUID></TiffData>'
           '</Pixels></Image></OME>')
    tifffile.imwrite(path, random_data((3, 40, 40), "uint8"), description=xml, metadata=None, photometric="minisblack")
    with pytest.raises(tilewise.NotFoundError, match=r'plane \(channel 0, z 2, t 0\): file "other.ome.tif" of the multi-file'):
        tilewise.open(path)


def test_a_region_past_the_size_limit_is_out_of_memory(tmp_path):
    path = tmp_path / "limit.ome.tif"
    write_planes(path, random_data((2, 40, 40), "uint16"), "CYX", levels=1)
    slide = tilewise.open(path)
    limit = tilewise.max_region_bytes()
    try:
        tilewise.set_max_region_bytes(1000)
        with pytest.raises(tilewise.OutOfMemoryError, match="region limit"):
            slide.read_region((0, 0), (20, 20), c=[0, 1])  # 1,600 bytes
        assert slide.read_region((0, 0), (20, 20), c=0).shape == (20, 20, 1)  # 800 bytes
    finally:
        tilewise.set_max_region_bytes(limit)
