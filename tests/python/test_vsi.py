"""Olympus/Evident cellSens VSI (a .vsi and the .ets files of its _name_ folder): grey channels and focal
planes at their bit depth (uint8, uint16, float32), RGB brightfield and RGB Z-stacks, raw, JPEG and JPEG 2000
tiles, several image stacks as scenes, the overview as the macro image. Every plane of every level is checked
against what the generator stored, and level 0 of every plane against slideio 2.10's reading of the same bytes
(JPEG tiles also against libjpeg-turbo's decoding of the stored tile; slideio reads raw RGB tiles as white
and no PNG tiles: those against the generator's pixels);
what OpenSlide 4.0.1 and the drop-in say of these files; errors naming the file and tile."""

from __future__ import annotations

import shutil
import struct

import imagecodecs
import numpy as np
import pytest

import slidegen
import tilewise
import tilewise.openslide
import vsi

slideio = pytest.importorskip("slideio")
openslide = pytest.importorskip("openslide")


def _stack(dtype, c: int, z: int, h: int = 600, w: int = 700) -> np.ndarray:
    """(C, Z, H, W) planes, each a distinct transform of a tissue image in `dtype`'s range."""
    base = slidegen.tissue_image(w, h, seed=3).astype(np.float64)
    out = np.empty((c, z, h, w), dtype)
    for ci in range(c):
        for zi in range(z):
            plane = base[..., ci % 3] * (1 + 0.1 * zi) + 5 * ci
            if dtype == np.float32:
                out[ci, zi] = (plane / 255 - 0.25).astype(np.float32)
            else:
                scale = 200 if dtype == np.uint16 else 1
                out[ci, zi] = np.clip(plane * scale, 0, np.iinfo(dtype).max).astype(dtype)
    return out


def _rgb(z: int, h: int = 600, w: int = 700) -> np.ndarray:
    base = slidegen.tissue_image(w, h, seed=4)
    return np.stack([np.roll(base, 9 * zi, axis=1) for zi in range(z)])[None]


def _slideio_plane(path, c: int, z: int) -> np.ndarray:
    scene = slideio.open_slide(str(path), "VSI").get_scene(0)
    plane = scene.read_block(scene.rect, channel_indices=[c], slices=(z, z + 1))
    return plane if plane.ndim == 2 else plane[..., 0]


GREY = [
    # dtype, (c, z), codec
    (np.uint16, (3, 2), "raw"),
    (np.uint8, (2, 1), "j2k"),
    (np.uint16, (2, 2), "j2k"),
    (np.float32, (1, 3), "raw"),
    (np.uint8, (3, 1), "jpeg"),
]


@pytest.mark.parametrize("dtype,dims,codec", GREY, ids=lambda v: getattr(v, "__name__", str(v)))
def test_grey_planes_every_level(tmp_path, dtype, dims, codec):
    world = _stack(dtype, *dims)
    names = ["DAPI", "AF488", "AF647"][:dims[0]]
    truth = vsi.write_vsi(tmp_path / "s.vsi", world, codec=codec, channel_names=names, mpp=(0.325, 0.33))
    with tilewise.open(tmp_path / "s.vsi") as s:
        assert s.format == "olympus"
        assert s.dtype == np.dtype(dtype)
        assert not s.is_rgb
        assert [ch.name for ch in s.channels] == names
        assert s.shape(0) == (1, dims[0], dims[1], 600, 700)
        assert s.mpp == pytest.approx((0.325, 0.33))
        assert len(s.levels) == len(truth["image"]) == 3
        tolerance = 2 if codec == "jpeg" else 0
        for k, level in enumerate(truth["image"]):
            h, w = level.shape[2:4]
            assert s.levels[k].dimensions == (w, h)
            for z in range(dims[1]):
                got = s.read_region((0, 0), (w, h), k, c=None, z=z)
                assert got.dtype == np.dtype(dtype) and got.shape == (h, w, dims[0])
                for c in range(dims[0]):
                    if codec == "jpeg":  # lossy: the stored pixels are the decoder's, compare with slideio below
                        continue
                    np.testing.assert_array_equal(got[..., c], level[c, z], err_msg=f"level {k} c {c} z {z}")
                    if k == 0:
                        np.testing.assert_array_equal(got[..., c], _slideio_plane(tmp_path / "s.vsi", c, z))
        if codec == "jpeg":
            for c in range(dims[0]):
                got = s.read_region((0, 0), (700, 600), 0, c=c)[..., 0].astype(int)
                ref = _slideio_plane(tmp_path / "s.vsi", c, 0).astype(int)
                assert np.abs(got - ref).max() <= tolerance
                assert np.abs(got - world[c, 0].astype(int)).mean() < 3


def test_patches_match_whole_plane_reads(tmp_path):
    world = _stack(np.uint16, 2, 2, 900, 1000)
    vsi.write_vsi(tmp_path / "s.vsi", world, codec="j2k", tile=128)
    rng = np.random.default_rng(7)
    with tilewise.open(tmp_path / "s.vsi") as s:
        for _ in range(20):
            x, y = int(rng.integers(0, 900)), int(rng.integers(0, 800))
            c, z = int(rng.integers(0, 2)), int(rng.integers(0, 2))
            got = s.read_region((x, y), (100, 100), 0, c=c, z=z)[..., 0]
            want = np.zeros((100, 100), np.uint16)
            part = world[c, z, y:y + 100, x:x + 100]
            want[:part.shape[0], :part.shape[1]] = part
            np.testing.assert_array_equal(got, want)


def _ets_tile(path, index: int) -> bytes:
    """The bytes of tile `index` of an ETS file's table."""
    data = path.read_bytes()
    coords, table, = struct.unpack_from("<I", data, 12)[0], struct.unpack_from("<Q", data, 32)[0]
    offset, length = struct.unpack_from("<QI", data, table + index * (20 + 4 * coords) + 4 + 4 * coords)
    return data[offset:offset + length]


@pytest.mark.parametrize("codec,z", [("jpeg", 1), ("j2k", 2), ("raw", 2), ("png", 1)])
def test_rgb_brightfield_and_z_stacks(tmp_path, codec, z):
    world = _rgb(z)
    overview = slidegen.tissue_image(120, 60, seed=9)
    truth = vsi.write_vsi(tmp_path / "s.vsi", world, codec=codec, overview=overview)
    with tilewise.open(tmp_path / "s.vsi") as s:
        assert s.is_rgb == (z == 1) and s.dtype == np.uint8 and s.shape(0)[:3] == (1, 3, z)
        assert "macro" in s.associated_images
        macro = np.asarray(s.associated_images["macro"])[..., :3].astype(int)
        assert macro.shape == (60, 120, 3) and np.abs(macro - overview.astype(int)).mean() < 10
        for zi in range(z):
            got = s.read_region((0, 0), (700, 600), 0, z=zi)[..., :3].astype(int)
            if codec == "jpeg":
                # slideio decodes JPEG with other rounding (up to 35 from libjpeg-turbo on this image): tilewise
                # is checked against libjpeg-turbo's decoding of the stored tile, and near slideio's
                tile = imagecodecs.jpeg8_decode(_ets_tile(tmp_path / "_s_" / "stack1" / "frame_t.ets", 0))
                np.testing.assert_array_equal(got[:256, :256], tile)
            if codec in ("jpeg", "j2k"):  # slideio 2.10 reads raw RGB tiles as white and no PNG tiles
                ref = slideio.open_slide(str(tmp_path / "s.vsi"), "VSI").get_scene(0)
                want = ref.read_block(ref.rect, slices=(zi, zi + 1)).astype(int)
                diff = np.abs(got - want)
                if codec == "jpeg":
                    assert diff.max() <= 40 and diff.mean() <= 1.5, (diff.max(), diff.mean())
                else:
                    assert diff.max() == 0
            for k, level in enumerate(truth["image"]):
                h, w = level.shape[2:4]
                got = s.read_region((0, 0), (w, h), k, z=zi)[..., :3].astype(int)
                assert np.abs(got - level[0, zi].astype(int)).mean() < (8 if codec == "jpeg" else 1e-9)


def test_missing_tiles_read_as_background(tmp_path):
    world = _rgb(1)
    vsi.write_vsi(tmp_path / "s.vsi", world, codec="raw", background=(250, 240, 230), drop={(0, 0, 0, 1, 1)})
    with tilewise.open(tmp_path / "s.vsi") as s:
        got = s.read_region((256, 256), (256, 256), 0)[..., :3]
        assert (got == (250, 240, 230)).all()
        np.testing.assert_array_equal(s.read_region((0, 0), (256, 256), 0)[..., :3], world[0, 0, :256, :256])
    grey = np.full((2, 1, 600, 700), 1000, np.uint16)
    vsi.write_vsi(tmp_path / "g.vsi", grey, drop={(0, 1, 0, 1, 1)})
    with tilewise.open(tmp_path / "g.vsi") as s:
        got = s.read_region((256, 256), (256, 256), 0, c=None)
        assert (got[..., 0] == 1000).all() and (got[..., 1] == 0).all()


def test_image_stacks_are_scenes(tmp_path):
    first, second = _stack(np.uint16, 2, 1), _stack(np.uint16, 2, 1, 300, 500)[:, :, ::-1].copy()
    vsi.write_vsi(tmp_path / "s.vsi", first, more_images=[second])
    with tilewise.open(tmp_path / "s.vsi") as s:
        assert [sc.dimensions for sc in s.scenes] == [(700, 600), (500, 300)]
        np.testing.assert_array_equal(s.read_region((0, 0), (700, 600), 0, c=1)[..., 0], first[1, 0])
    with tilewise.open(tmp_path / "s.vsi", scene=1) as s:
        assert s.levels[0].dimensions == (500, 300)
        np.testing.assert_array_equal(s.read_region((0, 0), (500, 300), 0, c=1)[..., 0], second[1, 0])


def test_openslide_and_the_drop_in_refuse_it(tmp_path):
    vsi.write_vsi(tmp_path / "s.vsi", _rgb(1))
    path = str(tmp_path / "s.vsi")
    assert openslide.OpenSlide.detect_format(path) is None
    assert tilewise.openslide.OpenSlide.detect_format(path) is None
    with pytest.raises(openslide.OpenSlideUnsupportedFormatError):
        openslide.OpenSlide(path)
    with pytest.raises(tilewise.openslide.OpenSlideUnsupportedFormatError):
        tilewise.openslide.OpenSlide(path)


def test_errors_name_the_file(tmp_path):
    vsi.write_vsi(tmp_path / "s.vsi", _stack(np.uint8, 1, 1))
    ets = tmp_path / "_s_" / "stack1" / "frame_t.ets"
    data = ets.read_bytes()
    ets.write_bytes(data[:-40])  # the tile table cut short
    with pytest.raises(tilewise.CorruptError, match=r"frame_t\.ets.*table of \d+ tiles runs past the end"):
        tilewise.open(tmp_path / "s.vsi")
    shutil.rmtree(tmp_path / "_s_")
    with pytest.raises(tilewise.TilewiseError, match=r"s\.vsi.*the folder _s_ beside it.*is missing"):
        tilewise.open(tmp_path / "s.vsi")


def test_damaged_tile_names_plane_and_tile(tmp_path):
    vsi.write_vsi(tmp_path / "s.vsi", _stack(np.uint16, 2, 1), codec="j2k")
    ets = tmp_path / "_s_" / "stack1" / "frame_t.ets"
    data = bytearray(ets.read_bytes())
    data[64 + 228:64 + 228 + 4] = bytes(4)  # the first tile's codestream loses its SOC and SIZ markers
    ets.write_bytes(bytes(data))
    with tilewise.open(tmp_path / "s.vsi") as s:
        with pytest.raises(tilewise.TilewiseError, match=r"frame_t\.ets"):
            s.read_region((0, 0), (256, 256), 0, c=0)


def test_planes_to_a_device_say_when_there_is_no_gpu(tmp_path):
    """Channels go to a device through the host (tests/gpu checks the pixels there); without a usable GPU
    the read says so."""
    if tilewise._core.gpu_status(0).ok:
        pytest.skip("a GPU is present: tests/gpu reads planes to it")
    vsi.write_vsi(tmp_path / "s.vsi", _stack(np.uint16, 2, 1))
    with tilewise.open(tmp_path / "s.vsi") as s:
        with pytest.raises(tilewise.UnsupportedError, match=r"cuda:0 is not available"):
            s.read_region((0, 0), (16, 16), c=0, device="cuda")
