"""tilewise.zarr (a read-only zarr v3 store with OME-NGFF metadata) and tilewise.dask (levels as dask
arrays), checked against the slide's own region reads."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import slidegen
import tilewise
from conftest import assert_same

zarr = pytest.importorskip("zarr")
da = pytest.importorskip("dask.array")
import tilewise.dask  # noqa: E402
import tilewise.zarr  # noqa: E402


@pytest.fixture(scope="module")
def slide(tmp_path_factory):
    path = tmp_path_factory.mktemp("zarr") / "s.tif"
    slidegen.write_vips_pyramid(path, slidegen.tissue_image(1001, 777, seed=9), tile=64)  # edge tiles
    return tilewise.open(path)


def level_pixels(slide, level):
    return slide.read_level_region((0, 0), slide.levels[level].dimensions, level=level)


def test_the_store_is_a_zarr_v3_group_with_ome_multiscales(slide):
    group = slide.zarr()
    assert sorted(group.array_keys(), key=int) == [str(i) for i in range(slide.level_count)]
    multiscales = group.attrs["ome"]["multiscales"][0]
    assert group.attrs["ome"]["version"] == "0.5"
    assert [a["name"] for a in multiscales["axes"]] == ["y", "x", "c"]
    for i, (lv, ds) in enumerate(zip(slide.levels, multiscales["datasets"])):
        array = group[str(i)]
        w, h = lv.dimensions
        assert array.shape == (h, w, 3) and array.dtype == np.uint8
        assert array.chunks == (*tilewise.zarr.chunk_shape(lv.tile_size), 3)
        assert array.chunks[0] % lv.tile_size[1] == 0 and array.chunks[1] % lv.tile_size[0] == 0  # whole tiles
        assert ds["path"] == str(i)
        scale = ds["coordinateTransformations"][0]["scale"]
        assert scale[0] / multiscales["datasets"][0]["coordinateTransformations"][0]["scale"][0] == pytest.approx(
            lv.downsample)


def test_zarr_reads_equal_region_reads_everywhere(slide):
    group = slide.zarr()
    for level in range(slide.level_count):
        full = level_pixels(slide, level)
        assert_same(group[str(level)][:], full)
    rng = np.random.default_rng(3)
    for _ in range(20):
        level = int(rng.integers(0, 2))
        h, w = group[str(level)].shape[:2]
        y0, x0 = int(rng.integers(0, h)), int(rng.integers(0, w))
        y1, x1 = int(rng.integers(y0 + 1, h + 1)), int(rng.integers(x0 + 1, w + 1))
        assert_same(group[str(level)][y0:y1, x0:x1], slide.read_level_region((x0, y0), (x1 - x0, y1 - y0), level=level))
    store = tilewise.zarr.SlideStore(slide)
    assert pickle.loads(pickle.dumps(store)) == store
    import asyncio

    from zarr.core.buffer import default_buffer_prototype

    assert store.read_only and not store.supports_writes
    with pytest.raises(PermissionError):
        asyncio.run(store.set("0/c/0/0/0", default_buffer_prototype().buffer.from_bytes(b"x")))
    assert asyncio.run(store.exists("0/c/0/0/0")) and not asyncio.run(store.exists("0/c/999/0/0"))
    listed = set(zarr.open_group(store=store, mode="r").array_keys())
    assert listed == {str(i) for i in range(slide.level_count)}


def test_planes_are_tczyx_arrays_of_their_sample_type_with_omero_channels(tmp_path):
    import tifffile

    path = tmp_path / "fluo.ome.tif"
    rng = np.random.default_rng(4)
    data = rng.integers(0, 65535, (2, 3, 2, 300, 260), dtype=np.uint16)  # T C Z Y X
    meta = {"axes": "TCZYX", "PhysicalSizeX": 0.5, "PhysicalSizeY": 0.5,
            "Channel": {"Name": ["DAPI", "FITC", "Cy5"], "Color": [65535, 16711935, -16776961]}}
    with tifffile.TiffWriter(path, ome=True) as tw:
        tw.write(data, subifds=1, metadata=meta, tile=(64, 64), compression="zlib")
        tw.write(data[..., ::2, ::2], subfiletype=1, tile=(64, 64), compression="zlib")
    group = tilewise.open(path).zarr()
    ome = group.attrs["ome"]
    assert [a["name"] for a in ome["multiscales"][0]["axes"]] == ["t", "c", "z", "y", "x"]
    assert ome["multiscales"][0]["datasets"][1]["coordinateTransformations"][0]["scale"] == [1.0, 1.0, 1.0, 1.0, 1.0]
    assert [(c["label"], c["color"]) for c in ome["omero"]["channels"]] == [
        ("DAPI", "0000FF"), ("FITC", "00FF00"), ("Cy5", "FF0000")]
    assert ome["omero"]["channels"][0]["window"]["end"] == 65535
    level0, level1 = group["0"], group["1"]
    assert level0.shape == data.shape and level0.dtype == np.uint16 and level0.chunks[:3] == (1, 1, 1)
    np.testing.assert_array_equal(level0[:], data)
    np.testing.assert_array_equal(level1[:], data[..., ::2, ::2])
    np.testing.assert_array_equal(level0[1, 2, 0, 17:201, 33:250], data[1, 2, 0, 17:201, 33:250])
    np.testing.assert_array_equal(da.from_zarr(level1).compute(), data[..., ::2, ::2])
    slide = tilewise.open(path)
    arr = tilewise.dask.level(slide, 1)
    assert arr.shape == (2, 3, 2, 150, 130) and arr.dtype == np.uint16 and arr.chunksize[:3] == (1, 3, 1)
    np.testing.assert_array_equal(arr.compute(), data[..., ::2, ::2])
    small = tilewise.dask.level(slide, 0, chunks=(1, 2, 2, 100, 90))
    np.testing.assert_array_equal(small[1, ::2, :, 5:290:3, 7:250].compute(), data[1, ::2, :, 5:290:3, 7:250])


def test_dask_levels_with_tile_and_custom_chunks_on_threads_and_processes(slide):
    import dask

    full = level_pixels(slide, 1)
    arr = tilewise.dask.level(slide, 1)
    tw, th = slide.levels[1].tile_size
    assert arr.shape == full.shape
    # Tile-aligned by default: every chunk boundary is a tile boundary (on level 0, 1001 x 777, several).
    level0 = tilewise.dask.level(slide, 0, chunks=(128, 192))
    assert level0.chunks[0][:-1] == (128,) * (len(level0.chunks[0]) - 1)
    for lv in (0, 1):
        tw, th = slide.levels[lv].tile_size
        default = tilewise.dask.level(slide, lv)
        assert all(c % th == 0 for c in default.chunks[0][:-1]) and all(c % tw == 0 for c in default.chunks[1][:-1])
    assert int(arr.sum(dtype=np.int64).compute()) == int(full.sum(dtype=np.int64))
    assert_same(tilewise.dask.level(slide, 1, chunks=(100, 77)).compute(), full)
    assert_same(arr[5:50:3, 7:90:2, 1].compute(), full[5:50:3, 7:90:2, 1])
    # The graph pickles (the slide by its path): a process pool reads the chunks in its workers.
    with dask.config.set(scheduler="processes", num_workers=2):
        assert int(tilewise.dask.level(slide, 2, chunks=(64, 64)).sum(dtype=np.int64).compute()) == int(
            level_pixels(slide, 2).sum(dtype=np.int64))
    assert_same(da.from_zarr(slide.zarr()["2"]).compute(), level_pixels(slide, 2))
    with pytest.raises(ValueError, match="level 9 does not exist"):
        tilewise.dask.level(slide, 9)


def mean_colour(patch):
    """A per-patch function for the cohort tests (module level: it travels to worker processes)."""
    return [float(v) for v in patch.reshape(-1, 3).mean(axis=0)]


def test_cohort_runs_on_a_local_cluster_equal_a_local_run(tmp_path):
    pytest.importorskip("distributed")
    from distributed import Client, LocalCluster

    paths = []
    for i in range(3):
        path = tmp_path / f"slide{i}.tif"
        slidegen.write_vips_pyramid(path, slidegen.tissue_image(700 + 50 * i, 500, seed=20 + i), tile=128)
        paths.append(str(path))
    expected = []
    for path in paths:  # the same work, by hand
        slide = tilewise.open(path)
        for x, y in tilewise.dask.patch_grid(slide, (128, 128), stride=(96, 96)):
            expected.append((path, int(x), int(y), mean_colour(slide.read_region((int(x), int(y)), (128, 128)))))
    bag = tilewise.dask.map_patches(paths, mean_colour, size=(128, 128), stride=(96, 96), patches_per_task=7)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster):
        records = bag.compute()
    got = sorted((r["path"], r["x"], r["y"], r["result"]) for r in records)
    assert got == sorted(expected) and len(got) > 50
    # At a level with a non-integer downsample, the level-0 locations map back onto the level grid exactly.
    odd = tmp_path / "odd.tif"
    slidegen.write_vips_pyramid(odd, slidegen.tissue_image(1001, 777, seed=24), tile=64)
    slide = tilewise.open(odd)
    ds = slide.levels[1].downsample
    assert ds != int(ds)
    for x, y in tilewise.dask.patch_grid(slide, (64, 64), level=1, stride=(64, 64)):
        lx, ly = int(x / ds), int(y / ds)
        assert lx % 64 == 0 and ly % 64 == 0, (x, y, lx, ly)
    # A tissue mask keeps fewer patches, never more, and only ones the grid has.
    slide = tilewise.open(paths[0])
    everything = {tuple(p) for p in tilewise.dask.patch_grid(slide, (128, 128))}
    tissue = {tuple(p) for p in tilewise.dask.patch_grid(slide, (128, 128), min_tissue=0.5)}
    assert tissue < everything and tissue  # this slide has background: some patches drop, not all


def test_a_missing_extra_is_named_with_its_pip_command(tmp_path):
    """Without zarr (or dask), Slide.zarr() (or tilewise.dask) says which extra installs it."""
    import subprocess
    import sys

    path = tmp_path / "s.tif"
    slidegen.write_tifffile_pyramid(path, slidegen.tissue_image(300, 200, seed=1), levels=1)
    code = f"""
import sys
sys.modules["zarr"] = None  # as if not installed
sys.modules["dask"] = None
import tilewise, tilewise.dask
slide = tilewise.open({str(path)!r})
for call in (slide.zarr, lambda: tilewise.dask.level(slide)):
    try:
        call()
    except ModuleNotFoundError as e:
        print(e)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == [
        "Slide.zarr() needs the 'zarr' package, which is not installed: pip install 'tilewise[zarr]'",
        "tilewise.dask.level needs the 'dask' package, which is not installed: pip install 'tilewise[dask]'",
    ]
