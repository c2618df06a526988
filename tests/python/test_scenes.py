"""Files of several images: CZI scenes and OME-TIFF images listed in ``slide.scenes`` and opened one at a time
with ``tilewise.open(path, scene=k)``, against Zeiss's libCZI (pylibCZIrw) and tifffile on the same bytes; the
default stays what OpenSlide shows (every CZI scene on one canvas, an OME-TIFF's first image)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import tifffile

import czi
import slidegen
import tilewise

SCENES = ((0, 0, 2, 2), (450, 150, 3, 2))  # (x, y, columns, rows) of 100-pixel tiles in the world


@pytest.fixture(scope="module")
def world() -> np.ndarray:
    return slidegen.tissue_image(800, 420, seed=12)


def test_czi_scenes_one_at_a_time(tmp_path, world):
    pyczi = pytest.importorskip("pylibCZIrw.czi")
    path = tmp_path / "scenes.czi"
    path.write_bytes(czi.build_czi(world, tile=100, levels=2, scenes=SCENES, tint=0))
    whole = tilewise.open(path)
    assert whole.scene is None and whole.dimensions == (750, 350)  # the canvas of both, as OpenSlide shows it
    assert whole.scenes == (tilewise.Scene("Scene 0", (200, 200)), tilewise.Scene("Scene 1", (300, 200)))
    with pyczi.open_czi(str(path)) as doc:
        rectangles = doc.scenes_bounding_rectangle
        for k, (x, y, cols, rows) in enumerate(SCENES):
            slide = tilewise.open(path, scene=k)
            assert slide.scene == k and slide.scenes == whole.scenes
            assert slide.dimensions == (cols * 100, rows * 100) and slide.level_count == 2
            assert slide.properties["openslide.region[0].x"] == "0" and "openslide.region[1].x" not in slide.properties
            ours = slide.read_region((0, 0), slide.dimensions)
            assert np.array_equal(ours, whole.read_region((x, y), slide.dimensions))
            r = rectangles[k]
            theirs = doc.read(roi=(r.x, r.y, r.w, r.h), scene=k)[..., ::-1]  # libCZI gives BGR
            assert np.array_equal(ours, theirs), k
            assert np.array_equal(ours, world[y:y + rows * 100, x:x + cols * 100])
            half = slide.read_region((0, 0), slide.levels[1].dimensions, level=1)
            assert np.array_equal(half, doc.read(roi=(r.x, r.y, r.w, r.h), scene=k, zoom=0.5)[..., ::-1])
    reopened = pickle.loads(pickle.dumps(tilewise.open(path, scene=1)))
    assert reopened.scene == 1 and reopened.dimensions == (300, 200)


def test_czi_scenes_of_channels(tmp_path):
    pyczi = pytest.importorskip("pylibCZIrw.czi")
    base = slidegen.tissue_image(800, 420, seed=13)
    stack = np.stack([base[..., c].astype(np.uint16) * 199 for c in range(2)])[None, :, None]
    path = tmp_path / "fluo.czi"
    path.write_bytes(czi.build_czi(stack, tile=100, levels=1, compression=5, scenes=SCENES,
                                   channels=[{"Name": "DAPI"}, {"Name": "FITC"}]))
    with pyczi.open_czi(str(path)) as doc:
        for k in range(2):
            slide = tilewise.open(path, scene=k)
            r = doc.scenes_bounding_rectangle[k]
            for c in range(2):
                theirs = doc.read(roi=(r.x, r.y, r.w, r.h), plane={"C": c, "Z": 0, "T": 0}, scene=k)[..., 0]
                assert np.array_equal(slide.read_region((0, 0), slide.dimensions, c=c)[..., 0], theirs), (k, c)


def test_ome_tiff_images_as_scenes(tmp_path):
    rng = np.random.default_rng(3)
    first = rng.integers(0, 65535, (2, 300, 400), np.uint16)
    second = rng.integers(0, 255, (3, 200, 250), np.uint8)
    path = tmp_path / "two.ome.tif"
    with tifffile.TiffWriter(path, ome=True) as tw:
        tw.write(first, tile=(64, 64), photometric="minisblack", metadata={"axes": "CYX", "Name": "tumour"})
        tw.write(second, tile=(64, 64), photometric="minisblack", metadata={"axes": "CYX", "Name": "normal"})
    default = tilewise.open(path)
    assert default.scene is None
    assert default.scenes == (tilewise.Scene("tumour", (400, 300)), tilewise.Scene("normal", (250, 200)))
    with tifffile.TiffFile(path) as tf:
        for k, series in enumerate(tf.series):
            slide = tilewise.open(path, scene=k)
            want = np.moveaxis(series.asarray(), 0, -1)
            assert slide.dtype == want.dtype and slide.shape(0)[1] == want.shape[-1]
            assert np.array_equal(slide.read_region((0, 0), slide.dimensions), want), k
            assert slide.properties["ome.Image.Name"] == ("tumour", "normal")[k]
    assert np.array_equal(default.read_region((0, 0), (400, 300)), tilewise.open(path, scene=0).read_region((0, 0), (400, 300)))


def test_scene_arguments_are_checked(tmp_path, world):
    path = tmp_path / "one.czi"
    path.write_bytes(czi.build_czi(world[:200, :200], tile=100, levels=1, scenes=((0, 0, 2, 2),)))
    assert tilewise.open(path).scenes == ()
    assert tilewise.open(path, scene=0).dimensions == (200, 200)  # a file of one image has scene 0
    with pytest.raises(tilewise.InvalidArgumentError, match=r"scene 1 does not exist \(the file has 1\)"):
        tilewise.open(path, scene=1)
    with pytest.raises(tilewise.InvalidArgumentError, match="scene -1 does not exist"):
        tilewise.open(path, scene=-1)
    with pytest.raises(tilewise.InvalidArgumentError, match="scene must be an index or None"):
        tilewise.open(path, scene="1")
    with pytest.raises(tilewise.InvalidArgumentError, match="scene must be an index or None"):
        tilewise.open(path, scene=True)
