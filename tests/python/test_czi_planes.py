"""Zeiss CZI channels, focal planes and time points (GRAY8, GRAY16, GRAY32FLOAT and BGR Z-stacks), every plane of
every level checked against Zeiss's own libCZI (pylibCZIrw) on the same bytes; channel metadata; what OpenSlide
4.0.1 and the drop-in say of these files; errors naming the plane."""

from __future__ import annotations

import numpy as np
import pytest

import czi
import slidegen
import tilewise

pyczi = pytest.importorskip("pylibCZIrw.czi")
openslide = pytest.importorskip("openslide")

CHANNELS = [
    {"Name": "DAPI", "Color": "#FF0000FF", "ExcitationWavelength": 353, "EmissionWavelength": 465, "ExposureTime": 150000000},
    {"Name": "AF488", "Color": "#FF00FF00", "ExcitationWavelength": 493, "EmissionWavelength": 517},
    {"Name": "AF647", "Color": "#FFFF0000"},
]


def _stack(dtype, t: int, c: int, z: int, h: int = 300, w: int = 420) -> np.ndarray:
    """(T, C, Z, H, W) planes, each a distinct transform of a tissue image in `dtype`'s range."""
    base = slidegen.tissue_image(w, h, seed=5).astype(np.float64)
    out = np.empty((t, c, z, h, w), dtype)
    for ti in range(t):
        for ci in range(c):
            for zi in range(z):
                plane = base[..., ci % 3] * (1 + 0.1 * zi) + 7 * ti + 3 * ci
                if dtype == np.uint16:
                    plane = plane * 200
                if dtype == np.float32:
                    out[ti, ci, zi] = (plane / 255 - 0.25).astype(np.float32)
                else:
                    out[ti, ci, zi] = np.clip(plane, 0, np.iinfo(dtype).max).astype(dtype)
    return out


def _libczi_plane(path, c: int, z: int, t: int, zoom: float = 1.0) -> np.ndarray:
    with pyczi.open_czi(str(path)) as doc:
        box = doc.total_bounding_box
        roi = (box["X"][0], box["Y"][0], box["X"][1] - box["X"][0], box["Y"][1] - box["Y"][0])
        return doc.read(roi=roi, plane={"C": c, "Z": z, "T": t}, zoom=zoom)


VARIANTS = [
    # dtype, (t, c, z), compression (0 none, 5 zstd, 6 zstd with header, 4 JPEG XR), hilo
    (np.uint8, (1, 3, 1), 0, False),
    (np.uint8, (2, 2, 3), 5, False),
    (np.uint16, (1, 3, 2), 6, True),
    (np.uint16, (2, 1, 2), 0, False),
    (np.float32, (1, 2, 2), 5, False),
    (np.uint8, (1, 2, 1), 4, False),
    (np.uint16, (1, 2, 1), 4, False),
]


@pytest.mark.parametrize("dtype,dims,compression,hilo", VARIANTS,
                         ids=[f"{np.dtype(v[0]).name}-tcz{''.join(map(str, v[1]))}-comp{v[2]}" for v in VARIANTS])
def test_every_plane_of_every_level_equals_libczi(tmp_path, dtype, dims, compression, hilo):
    stack = _stack(dtype, *dims)
    path = tmp_path / "planes.czi"
    path.write_bytes(czi.build_czi(stack, tile=128, levels=3, compression=compression, hilo=hilo,
                                   scenes=((0, 0, 3, 2),), channels=CHANNELS))
    slide = tilewise.open(path)
    t, c, z = dims
    assert slide.shape(0)[:3] == (t, c, z) and slide.dtype == np.dtype(dtype) and not slide.is_rgb
    assert slide.level_count == 3
    with pyczi.open_czi(str(path)) as doc:  # the focal planes' spacing as libCZI reads the Scaling (metres)
        distances = doc.metadata["ImageDocument"]["Metadata"]["Scaling"]["Items"]["Distance"]
        stated = [float(d["Value"]) * 1e6 for d in distances if d["@Id"] == "Z"]
    assert slide.z_spacing == (pytest.approx(stated[0]) if z > 1 else None)
    for level in range(3):
        w, h = slide.levels[level].dimensions
        for ti in range(t):
            for zi in range(z):
                ours = slide.read_region((0, 0), (w, h), level=level, z=zi, t=ti)
                assert ours.shape == (h, w, c) and ours.dtype == np.dtype(dtype)
                for ci in range(c):
                    theirs = _libczi_plane(path, ci, zi, ti, zoom=1 / 2 ** level)[..., 0]
                    assert theirs.shape == (h, w)
                    assert np.array_equal(ours[..., ci], theirs), (level, ti, ci, zi)
    if compression != 4:  # lossless: level 0 is the source, tinted per tile
        ours = slide.read_region((0, 0), (128, 128), c=c - 1, z=z - 1, t=t - 1)[..., 0]
        want = stack[t - 1, c - 1, z - 1, :128, :128]
        tint = -6 if dtype != np.float32 else np.float32(-6)
        expect = want + tint if dtype == np.float32 else np.clip(want.astype(np.int64) + tint, 0, None).astype(dtype)
        assert np.array_equal(ours, expect)


def test_channel_metadata_and_selections(tmp_path):
    stack = _stack(np.uint16, 1, 3, 2)
    path = tmp_path / "meta.czi"
    path.write_bytes(czi.build_czi(stack, tile=128, levels=1, compression=5, scenes=((0, 0, 3, 2),), channels=CHANNELS))
    slide = tilewise.open(path)
    names = [ch.name for ch in slide.channels]
    assert names == ["DAPI", "AF488", "AF647"]
    dapi = slide.channels[0]
    assert dapi.color == (0, 0, 255) and dapi.excitation_nm == 353 and dapi.emission_nm == 465
    assert dapi.exposure_s == pytest.approx(0.15)
    assert slide.channels[2].color == (255, 0, 0) and slide.channels[2].exposure_s is None
    # a selection in any order equals the whole read's channels
    whole = slide.read_region((50, 40), (200, 150), z=1)
    assert np.array_equal(slide.read_region((50, 40), (200, 150), c=[2, 0], z=1), whole[..., [2, 0]])
    assert np.array_equal(slide.read_region((50, 40), (200, 150), c=1, z=1), whole[..., [1]])
    # the RGB rendering of the first plane: grey from the first channel's high byte
    rgb = slide.read_region((50, 40), (200, 150), c="rgb")
    assert rgb.dtype == np.uint8 and rgb.shape == (150, 200, 3)
    first = slide.read_region((50, 40), (200, 150), c=0)[..., 0]
    assert np.array_equal(rgb[..., 0], (first >> 8).astype(np.uint8))
    with pytest.raises(tilewise.InvalidArgumentError, match="plane z 2"):
        slide.read_region((0, 0), (10, 10), z=2)


def test_several_scenes_of_planes_equal_libczi(tmp_path):
    stack = _stack(np.uint8, 1, 2, 2, h=400, w=700)
    path = tmp_path / "scenes.czi"
    path.write_bytes(czi.build_czi(stack, tile=100, levels=2, compression=5, scenes=((0, 0, 2, 2), (400, 150, 2, 2)),
                                   channels=CHANNELS))
    slide = tilewise.open(path)
    assert slide.properties["openslide.region[1].x"] == "400"
    for level in range(2):
        w, h = slide.levels[level].dimensions
        for ci in range(2):
            for zi in range(2):
                theirs = _libczi_plane(path, ci, zi, 0, zoom=1 / 2 ** level)[..., 0]
                ours = slide.read_region((0, 0), (w, h), level=level, c=ci, z=zi)[..., 0]
                assert np.array_equal(ours, theirs), (level, ci, zi)


def test_a_brightfield_z_stack_reads_rgb_planes(tmp_path):
    rgb = slidegen.tissue_image(420, 300, seed=8)
    stack = np.stack([np.clip(rgb.astype(int) + 20 * z, 0, 255).astype(np.uint8) for z in range(3)])[None, None]
    path = tmp_path / "bf-z.czi"
    path.write_bytes(czi.build_czi(stack, tile=128, levels=2, compression=5, scenes=((0, 0, 3, 2),)))
    slide = tilewise.open(path)
    assert slide.shape(0)[:3] == (1, 3, 3) and slide.dtype == np.uint8 and not slide.is_rgb
    for level in range(2):
        w, h = slide.levels[level].dimensions
        for zi in range(3):
            theirs = _libczi_plane(path, 0, zi, 0, zoom=1 / 2 ** level)[..., ::-1]  # libCZI gives BGR
            assert np.array_equal(slide.read_region((0, 0), (w, h), level=level, z=zi), theirs), (level, zi)
    # the plain RGB read (and the drop-ins' c="rgb") is the first focal plane
    assert np.array_equal(slide.read_region((0, 0), (200, 100)), slide.read_region((0, 0), (200, 100), z=0))
    # zarr shows every plane
    pytest.importorskip("zarr")
    group = slide.zarr()
    assert group["0"].shape == (1, 3, 3, 256, 384)
    assert np.array_equal(group["0"][0, :, 2, :100, :200], np.moveaxis(slide.read_region((0, 0), (200, 100), z=2), -1, 0))


@pytest.mark.parametrize("dims,dtype,message", [
    ((1, 1, 1), np.uint8, "Pixel type GRAY8 is not supported"),
    ((1, 2, 1), np.uint16, "Nonzero subblock channel 1"),
    ((1, 2, 2), np.uint16, 'Unrecognized subblock dimension "Z"'),
    ((2, 1, 1), np.float32, 'Unrecognized subblock dimension "T"'),
])
def test_the_openslide_drop_in_refuses_what_openslide_refuses(tmp_path, dims, dtype, message):
    path = tmp_path / "f.czi"
    path.write_bytes(czi.build_czi(_stack(dtype, *dims, h=150, w=200), tile=100, levels=1, scenes=((0, 0, 2, 1),)))
    with pytest.raises(openslide.OpenSlideError, match=message):
        openslide.OpenSlide(str(path))
    from tilewise import openslide as dropin

    with pytest.raises(dropin.OpenSlideError, match=message):
        dropin.OpenSlide(str(path))
    assert dropin.OpenSlide.detect_format(str(path)) == openslide.OpenSlide.detect_format(str(path)) == "zeiss"
    tilewise.open(path).read_region((0, 0), (50, 50))  # the native API reads it


def test_damage_names_the_plane_and_mixed_pixel_types_are_refused(tmp_path):
    stack = _stack(np.uint16, 1, 2, 2, h=150, w=200)
    data = bytearray(czi.build_czi(stack, tile=100, levels=1, compression=5, scenes=((0, 0, 2, 1),)))
    # the last subblock is (tile 1, channel 1, z 1): damage its zstd frame
    last = data.rindex(b"ZISRAWSUBBLOCK")
    data[last + 300:last + 340] = bytes(40)
    path = tmp_path / "damaged.czi"
    path.write_bytes(bytes(data))
    slide = tilewise.open(path)
    slide.read_region((0, 0), (200, 150), c=0, z=1)  # other planes read
    with pytest.raises(tilewise.TilewiseError, match=r"plane \(channel 1, z 1, t 0\) tile \(1,0\)"):
        slide.read_region((0, 0), (200, 150), c=1, z=1)
    # a GRAY16 image with one GRAY8 subblock (its directory entry's pixel type edited)
    data = bytearray(czi.build_czi(stack, tile=100, levels=1, scenes=((0, 0, 2, 1),)))
    entry = data.index(b"DV", data.index(b"ZISRAWDIRECTORY"))
    data[entry + 2:entry + 6] = (0).to_bytes(4, "little")
    path.write_bytes(bytes(data))
    with pytest.raises(tilewise.UnsupportedError, match="subblocks of pixel types GRAY8 and GRAY16"):
        tilewise.open(path)


@pytest.mark.parametrize("pixel", ["gray16", "bgr24"])
def test_windows_of_uncompressed_subblocks_read_only_their_rows(tmp_path, pixel):
    """A window of an uncompressed subblock reads just its rows: random windows (cache off, edge subblocks
    smaller than the level's unit, a gap between scenes) equal the crop of the whole level, which equals
    libCZI's where a subblock covers it (libCZI's background is 0, an RGB read's white)."""
    base = slidegen.tissue_image(500, 360, seed=21)
    world = base if pixel == "bgr24" else np.stack([base[..., c].astype(np.uint16) * 201 for c in range(2)])[None, :, None]
    path = tmp_path / "raw.czi"
    path.write_bytes(czi.build_czi(world, tile=192, levels=1, compression=0, scenes=((0, 0, 2, 1), (250, 200, 2, 1))))
    slide = tilewise.open(path)
    w, h = slide.dimensions
    whole = slide.read_region((0, 0), (w, h), use_cache=False)
    with pyczi.open_czi(str(path)) as doc:
        box = doc.total_bounding_box
        theirs = doc.read(roi=(box["X"][0], box["Y"][0], w, h), plane={"C": 0, "Z": 0, "T": 0})
    covered = np.zeros((h, w), bool)
    covered[:192, :384] = covered[200:360, 250:500] = True
    if pixel == "bgr24":
        assert np.array_equal(whole[covered], theirs[..., ::-1][covered])
        assert (whole[~covered] == 255).all()
    else:
        assert np.array_equal(whole[..., 0], theirs[..., 0])
    rng = np.random.default_rng(2)
    for _ in range(60):
        x, y = int(rng.integers(-30, w - 20)), int(rng.integers(-30, h - 20))
        ww, hh = int(rng.integers(1, 200)), int(rng.integers(1, 150))
        got = slide.read_region((x, y), (ww, hh), use_cache=False)
        x0, y0 = max(x, 0), max(y, 0)
        x1, y1 = min(x + ww, w), min(y + hh, h)
        assert np.array_equal(got[y0 - y:y1 - y, x0 - x:x1 - x], whole[y0:y1, x0:x1]), (x, y, ww, hh)
