"""The native Python API: metadata, errors, cache, threads, pickling, GIL release."""

from __future__ import annotations

import pickle
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import slidegen
import tilewise
from conftest import assert_same


@pytest.fixture(scope="module")
def deflate_slide(tmp_path_factory):
    path = tmp_path_factory.mktemp("api") / "deflate.tif"
    images = slidegen.write_tifffile_pyramid(path, slidegen.tissue_image(900, 700, seed=1), compression="deflate",
                                             tile=(128, 128), levels=3, description="tilewise test slide")
    return path, images


def test_metadata(deflate_slide):
    path, images = deflate_slide
    with tilewise.open(path) as slide:
        assert slide.path == str(path)
        assert slide.format == "generic-tiff"
        assert slide.dimensions == (900, 700)
        assert slide.level_count == 3
        assert slide.levels[1] == tilewise.Level((450, 350), 2.0, (128, 128), "deflate")
        assert slide.mpp == pytest.approx((0.25, 0.25))
        assert slide.properties["openslide.vendor"] == "generic-tiff"
        assert slide.properties["openslide.comment"] == "tilewise test slide"
        assert slide.properties["tiff.ImageDescription"] == "tilewise test slide"
        assert slide.properties["openslide.level[2].width"] == "225"
        assert dict(slide.associated_images) == {}
        assert slide.icc_profile is None
        assert slide.best_level_for_downsample(1.0) == 0
        assert slide.best_level_for_downsample(3.0) == 1
        assert slide.best_level_for_downsample(100.0) == 2
        with pytest.raises(TypeError):
            slide.properties["x"] = "y"  # read-only mapping


def test_read_region_shapes_fill_and_out(deflate_slide):
    path, images = deflate_slide
    slide = tilewise.open(path)
    patch = slide.read_region((10, 20), (64, 32))
    assert patch.shape == (32, 64, 3) and patch.dtype == np.uint8
    assert_same(patch, images[0][20:52, 10:74])
    outside = slide.read_region((-50, -50), (40, 40), fill=(1, 2, 3))
    assert (outside == np.array([1, 2, 3], np.uint8)).all()
    assert slide.read_region((0, 0), (0, 5)).shape == (5, 0, 3)
    out = np.zeros((32, 64, 3), np.uint8)
    assert slide.read_region((10, 20), (64, 32), out=out) is out
    assert_same(out, patch)
    big = np.zeros((100, 200, 3), np.uint8)
    view = big[10:42, 20:84]  # rows strided inside a larger array
    slide.read_region((10, 20), (64, 32), out=view)
    assert_same(big[10:42, 20:84], patch)
    assert not big[:10].any() and not big[42:].any()


def test_errors_are_typed_and_name_the_file(tmp_path, deflate_slide):
    path, _ = deflate_slide
    slide = tilewise.open(path)
    with pytest.raises(tilewise.NotFoundError) as e:
        tilewise.open(tmp_path / "missing.svs")
    assert isinstance(e.value, FileNotFoundError) and "missing.svs" in str(e.value)
    with pytest.raises(tilewise.InvalidArgumentError, match="directory"):
        tilewise.open(tmp_path)
    (tmp_path / "empty.tif").write_bytes(b"")
    with pytest.raises(tilewise.UnsupportedError, match="empty"):
        tilewise.open(tmp_path / "empty.tif")
    (tmp_path / "text.tif").write_text("hello, not a tiff")
    with pytest.raises(tilewise.UnsupportedError, match="not a TIFF"):
        tilewise.open(tmp_path / "text.tif")
    with pytest.raises(ValueError, match="level 3 does not exist"):
        slide.read_region((0, 0), (10, 10), level=3)
    with pytest.raises(ValueError):
        slide.read_region((0, 0), (10, 10), level=-1)
    with pytest.raises(ValueError):
        slide.read_region((0, 0), (-1, 10))
    with pytest.raises(tilewise.OutOfMemoryError, match="region limit"):
        slide.read_region((0, 0), (200000, 200000))
    with pytest.raises(tilewise.UnsupportedError, match="cuda"):
        slide.read_region((0, 0), (10, 10), device="cuda")
    with pytest.raises(ValueError, match="closed"):
        slide.close()
        slide.read_region((0, 0), (1, 1))


def test_truncated_file_fails_with_corrupt_error_naming_the_tile(tmp_path, deflate_slide):
    path, _ = deflate_slide
    data = path.read_bytes()
    for cut in (len(data) // 3, len(data) // 2, len(data) - 100):
        p = tmp_path / f"cut{cut}.tif"
        p.write_bytes(data[:cut])
        try:
            slide = tilewise.open(p)
        except tilewise.CorruptError as e:  # the IFDs (written last) were cut off
            assert p.name in str(e)
            continue
        errors = []
        for level, lv in enumerate(slide.levels):
            try:
                slide.read_region((0, 0), lv.dimensions, level=level)
            except tilewise.CorruptError as e:
                errors.append(str(e))
        assert errors, f"cut at {cut}: every level read although data is missing"
        assert re.search(rf"{p.name}: level \d tile \(\d+,\d+\) at offset \d+: ", errors[-1]), errors[-1]


def test_cache_statistics_and_capacity(deflate_slide):
    path, images = deflate_slide
    slide = tilewise.open(path)
    tilewise.set_cache_capacity(64 << 20)
    tilewise.clear_cache()
    tilewise.reset_cache_stats()
    a = slide.read_region((5, 5), (100, 100))  # one tile, cut by the region: decoded partially, not cached
    stats = tilewise.cache_stats()
    assert stats["misses"] == 1 and stats["hits"] == 0 and stats["entries"] == 0
    assert_same(slide.read_region((5, 5), (100, 100)), a)  # asked for again: decoded whole and admitted
    assert tilewise.cache_stats()["entries"] == 1
    b = slide.read_region((5, 5), (100, 100))
    assert tilewise.cache_stats()["hits"] == 1
    assert_same(a, b)
    tilewise.set_cache_capacity(0)
    assert tilewise.cache_stats()["entries"] == 0
    assert_same(slide.read_region((5, 5), (100, 100)), a)
    tilewise.set_cache_capacity(256 << 20)
    assert tilewise.cache_capacity() == 256 << 20


def test_forked_children_keep_the_configured_cache_capacity(deflate_slide):
    """A forked child re-creates the process-wide cache (it must not touch the parent's locks); it starts with
    the capacity the parent configured, not the default (DataLoader workers of a "cache off" run read with
    the cache off)."""
    import multiprocessing

    path, _ = deflate_slide
    saved = tilewise.cache_capacity()
    try:
        for capacity in (0, 3 << 20):
            tilewise.set_cache_capacity(capacity)
            with multiprocessing.get_context("fork").Pool(1) as pool:
                assert pool.apply(_capacity_after_a_read, (str(path),)) == capacity
    finally:
        tilewise.set_cache_capacity(saved)


def _capacity_after_a_read(path: str) -> int:
    tilewise.open(path).read_region((0, 0), (64, 64))
    return tilewise.cache_capacity()


def test_32_threads_match_sequential_reads(deflate_slide):
    path, _ = deflate_slide
    slide = tilewise.open(path)
    rng = np.random.default_rng(2)
    requests = [((int(rng.integers(-100, 900)), int(rng.integers(-100, 700))), (int(rng.integers(1, 300)),
                 int(rng.integers(1, 300))), int(rng.integers(0, 3))) for _ in range(300)]
    expected = [slide.read_region(loc, size, level=lv, use_cache=False) for loc, size, lv in requests]
    with ThreadPoolExecutor(32) as pool:
        results = list(pool.map(lambda r: slide.read_region(r[0], r[1], level=r[2]), requests))
    for want, got in zip(expected, results):
        assert_same(got, want)


def test_reads_release_the_gil(tmp_path):
    path = tmp_path / "big.tif"
    slidegen.write_tifffile_pyramid(path, slidegen.tissue_image(3000, 3000, seed=4), compression="jpeg",
                                    tile=(256, 256), levels=1)
    slide = tilewise.open(path)
    tilewise.set_worker_threads(1)
    try:
        ticks = 0
        stop = threading.Event()

        def count():
            nonlocal ticks
            while not stop.is_set():
                ticks += 1
                time.sleep(0)

        t = threading.Thread(target=count)
        t.start()
        start = ticks
        for _ in range(3):
            slide.read_region((0, 0), (3000, 3000), use_cache=False)
        progressed = ticks - start
        stop.set()
        t.join()
        assert progressed > 100, "the Python thread made no progress while tilewise decoded"
    finally:
        tilewise.set_worker_threads(0)


def test_pickle_reopens_the_slide(deflate_slide):
    path, images = deflate_slide
    slide = tilewise.open(path)
    clone = pickle.loads(pickle.dumps(slide))
    assert clone.path == slide.path and clone.dimensions == slide.dimensions
    assert_same(clone.read_region((3, 4), (50, 60), level=1), slide.read_region((3, 4), (50, 60), level=1))


def test_the_package_is_typed_and_the_stubs_cover_the_extension():
    import ast
    from pathlib import Path

    package = Path(tilewise.__file__).parent
    assert (package / "py.typed").exists()
    stub = ast.parse((package / "_core.pyi").read_text())
    declared = {n.name for n in stub.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    declared |= {t.id for n in stub.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    declared |= {n.target.id for n in stub.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
    public = {name for name in dir(tilewise._core) if not name.startswith("_")}
    assert public and public <= declared, f"not in _core.pyi: {sorted(public - declared)}"


def test_statuses_that_are_returned_carry_codes_and_raise_typed_errors():
    status = tilewise._core.gpu_status(-1)
    assert not status.ok and status.code in (tilewise._core.StatusCode.INVALID_ARGUMENT,
                                             tilewise._core.StatusCode.UNSUPPORTED)
    with pytest.raises(tilewise.TilewiseError, match="context: "):
        status.raise_if_error("context")
    assert tilewise._core.Status().ok
    tilewise._core.Status().raise_if_error()  # ok: nothing raised
