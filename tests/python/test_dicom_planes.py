"""DICOM WSI optical paths (channels), focal planes (Z) and MONOCHROME2 8/16-bit samples: every plane of every
level checked against wsidicom on the same files and against the generated source (lossless syntaxes); TILED_FULL
and TILED_SPARSE frames, one instance per optical path, channel metadata; what OpenSlide 4.0.1 and the drop-in say
of these series; errors naming the plane."""

from __future__ import annotations

import numpy as np
import pydicom
import pytest

import dicom_wsi
import slidegen
import tilewise

wsidicom = pytest.importorskip("wsidicom")
openslide = pytest.importorskip("openslide")

PATHS = [{"id": "0", "description": "DAPI", "wavelength": 405.0}, {"id": "1", "description": "FITC", "wavelength": 488.0},
         {"id": "2", "description": "Cy5", "wavelength": 640.0}]


def _stack(dtype, paths: int, zs: int, h: int = 400, w: int = 600) -> np.ndarray:
    """(paths, focal planes, H, W) samples of `dtype`, each plane a distinct transform of a tissue image."""
    base = slidegen.tissue_image(w, h, seed=4).astype(np.int64)
    out = np.empty((paths, zs, h, w), dtype)
    for p in range(paths):
        for z in range(zs):
            plane = base[..., p % 3] + 9 * z + 5 * p
            out[p, z] = np.clip(plane * (251 if dtype == np.uint16 else 1), 0, np.iinfo(dtype).max)
    return out


def _write_pyramid(folder, stack, *, levels: int, codec: str, sparse: bool, z_um, paths=PATHS, tile: int = 128):
    """One instance per level (each level the previous one decimated by 2) of one series."""
    series = dicom_wsi.new_series()
    first = None
    for level in range(levels):
        image_type = ("ORIGINAL", "PRIMARY", "VOLUME", "NONE") if level == 0 else ("DERIVED", "PRIMARY", "VOLUME", "RESAMPLED")
        p = dicom_wsi.write_instance(folder / f"level{level}.dcm", np.ascontiguousarray(stack[:, :, ::2 ** level, ::2 ** level]),
                                     series=series, tile=tile, codec=codec, image_type=image_type,
                                     spacing_mm=0.00025 * 2 ** level, instance_number=level + 1, paths=paths,
                                     z_offsets_um=z_um, sparse=sparse)
        first = first or p
    return first


VARIANTS = [
    # dtype, paths, focal planes, codec, TILED_SPARSE
    (np.uint8, 3, 1, "raw", False),
    (np.uint16, 2, 3, "raw", True),
    (np.uint16, 2, 2, "jpeg2000-lossless", False),
    (np.uint8, 1, 3, "jpeg2000-lossless", True),
    (np.uint16, 3, 1, "jpegls", False),
    (np.uint8, 2, 2, "jpegls", True),
]


@pytest.mark.parametrize("dtype,paths,zs,codec,sparse", VARIANTS,
                         ids=[f"{np.dtype(v[0]).name}-c{v[1]}-z{v[2]}-{v[3]}-{'sparse' if v[4] else 'full'}" for v in VARIANTS])
def test_every_plane_of_every_level_equals_the_source_and_wsidicom(tmp_path, dtype, paths, zs, codec, sparse):
    stack = _stack(dtype, paths, zs)
    z_um = [1.5 * z for z in range(zs)]
    path = _write_pyramid(tmp_path, stack, levels=3, codec=codec, sparse=sparse, z_um=z_um, paths=PATHS[:paths])
    slide = tilewise.open(path)
    assert slide.shape(0) == (1, paths, zs, 400, 600) and slide.dtype == np.dtype(dtype) and not slide.is_rgb
    assert [c.name for c in slide.channels] == [p["description"] for p in PATHS[:paths]]
    assert slide.level_count == 3 and slide.warnings == ()
    reference = wsidicom.WsiDicom.open(tmp_path)
    for level in range(3):
        w, h = slide.levels[level].dimensions
        for z in range(zs):
            ours = slide.read_region((0, 0), (w, h), level=level, z=z)
            for c in range(paths):
                want = stack[c, z, ::2 ** level, ::2 ** level]
                assert np.array_equal(ours[..., c], want), (level, c, z)
                if codec != "jpegls":  # wsidicom decodes JPEG-LS only with pylibjpeg's plugin
                    theirs = reference.read_region((0, 0), level, (w, h), z=z_um[z], path=PATHS[c]["id"], as_array=True)
                    assert np.array_equal(ours[..., c], np.squeeze(theirs)), (level, c, z)


def test_jpeg_grey_frames_equal_wsidicom(tmp_path):
    stack = _stack(np.uint8, 2, 1)
    path = _write_pyramid(tmp_path, stack, levels=2, codec="jpeg", sparse=False, z_um=[0.0], paths=PATHS[:2])
    slide = tilewise.open(path)
    reference = wsidicom.WsiDicom.open(tmp_path)
    for level in range(2):
        w, h = slide.levels[level].dimensions
        ours = slide.read_region((0, 0), (w, h), level=level)
        for c in range(2):
            theirs = np.squeeze(reference.read_region((0, 0), level, (w, h), path=PATHS[c]["id"], as_array=True))
            assert np.abs(ours[..., c].astype(int) - theirs).max() <= 1, (level, c)
            assert np.abs(ours[..., c].astype(int) - stack[c, 0, ::2 ** level, ::2 ** level]).mean() < 5  # JPEG q85 of a noisy texture


def test_one_instance_per_optical_path(tmp_path):
    """Fluorescence series written one instance per channel (each with its own Optical Path Sequence)."""
    stack = _stack(np.uint16, 3, 1)
    series = dicom_wsi.new_series()
    for c in range(3):
        dicom_wsi.write_instance(tmp_path / f"c{c}.dcm", stack[c:c + 1], series=series, tile=128, codec="raw",
                                 paths=[PATHS[c]], instance_number=c + 1)
    slide = tilewise.open(tmp_path / "c1.dcm")
    assert slide.shape(0)[:3] == (1, 3, 1) and slide.warnings == ()
    assert [(c.name, c.excitation_nm) for c in slide.channels] == [("DAPI", 405.0), ("FITC", 488.0), ("Cy5", 640.0)]
    region = slide.read_region((100, 50), (300, 200))
    for c in range(3):
        assert np.array_equal(region[..., c], stack[c, 0, 50:250, 100:400]), c
    assert np.array_equal(slide.read_region((100, 50), (300, 200), c=[2, 0]), region[..., [2, 0]])


def test_rgb_focal_planes_and_optical_paths(tmp_path, ):
    base = slidegen.tissue_image(600, 400, seed=6)
    z_stack = np.stack([base, 255 - base, base // 2])[None]
    path = dicom_wsi.write_instance(tmp_path / "z.dcm", z_stack, series=dicom_wsi.new_series(), tile=256, codec="raw",
                                    z_offsets_um=[0.0, 2.0, 4.0])
    slide = tilewise.open(path)
    assert slide.shape(0)[:3] == (1, 3, 3) and slide.dtype == np.uint8 and not slide.is_rgb
    for z in range(3):
        assert np.array_equal(slide.read_region((0, 0), (600, 400), z=z), z_stack[0, z]), z
    assert np.array_equal(slide.read_region((0, 0), (600, 400), c="rgb"), base)  # the drop-ins' first plane
    # two RGB optical paths: the first is read, as OpenSlide reads it
    (tmp_path / "paths").mkdir()
    paths = dicom_wsi.write_instance(tmp_path / "paths" / "p.dcm", np.stack([base, 255 - base])[:, None],
                                     series=dicom_wsi.new_series(), tile=256, codec="raw", paths=[{"id": "1"}, {"id": "2"}])
    slide = tilewise.open(paths)
    assert slide.is_rgb and any('first ("1") is read' in w for w in slide.warnings)
    assert np.array_equal(slide.read_region((0, 0), (600, 400)), base)
    theirs = np.asarray(openslide.OpenSlide(str(paths)).read_region((0, 0), 0, (600, 400)))[..., :3]
    assert np.array_equal(theirs, base)


def _refused(tmp_path, name, image, **kw):
    return dicom_wsi.write_instance(tmp_path / name, image, series=dicom_wsi.new_series(), tile=128, codec="raw", **kw)


def test_the_openslide_drop_in_refuses_what_openslide_refuses(tmp_path):
    base = slidegen.tissue_image(300, 200, seed=1)
    grey = _refused(tmp_path, "grey.dcm", base[..., 0])
    grey16 = _refused(tmp_path, "grey16.dcm", base[..., 0].astype(np.uint16) * 250)
    for p in (grey16,):  # a writer that keeps Planar Configuration for grey frames
        ds = pydicom.dcmread(p)
        ds.PlanarConfiguration = 0
        ds.save_as(p)
    grey8_pc = _refused(tmp_path, "grey8pc.dcm", base[..., 0])
    ds = pydicom.dcmread(grey8_pc)
    ds.PlanarConfiguration = 0
    ds.save_as(grey8_pc)
    z = _refused(tmp_path, "z.dcm", np.stack([base, base])[None], z_offsets_um=[0.0, 1.0])
    from tilewise import openslide as dropin

    cases = [(grey, "Couldn't read PlanarConfiguration"), (grey16, "Attribute BitsAllocated value 16 != 8"),
             (grey8_pc, "Attribute SamplesPerPixel value 1 != 3"), (z, "Attribute TotalPixelMatrixFocalPlanes value 2 != 1")]
    for path, message in cases:
        with pytest.raises(openslide.OpenSlideError) as theirs:
            openslide.OpenSlide(str(path))
        with pytest.raises(dropin.OpenSlideError) as ours:
            dropin.OpenSlide(str(path))
        assert str(ours.value) == str(theirs.value) == f"Reading {path}: {message}"
        tilewise.open(path).read_region((0, 0), (50, 50))  # the native API reads them


def test_damage_names_the_plane(tmp_path):
    stack = _stack(np.uint16, 2, 2, h=256, w=256)
    path = dicom_wsi.write_instance(tmp_path / "d.dcm", stack, series=dicom_wsi.new_series(), tile=128,
                                    codec="jpeg2000-lossless", paths=PATHS[:2], z_offsets_um=[0.0, 1.0], offsets="basic")
    ds = pydicom.dcmread(path)
    frames = list(pydicom.encaps.generate_frames(ds.PixelData, number_of_frames=ds.NumberOfFrames))
    frames[13] = frames[13][:40] + bytes(len(frames[13]) - 40)  # path 1, z 1, tile (1, 0)
    ds.PixelData = pydicom.encaps.encapsulate(frames)
    ds.save_as(path)
    slide = tilewise.open(path)
    slide.read_region((0, 0), (256, 256), z=0)
    with pytest.raises(tilewise.TilewiseError, match=r"level 0 plane \(channel 1, z 1, t 0\) tile \(1,0\)"):
        slide.read_region((0, 0), (256, 256), z=1)
