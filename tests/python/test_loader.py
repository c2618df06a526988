"""The batch loader (Slide.read_regions): equal to single reads for every option combination, ordered,
arrays valid while held, per-item errors, early stop, and use from processes (fork and spawn)."""

from __future__ import annotations

import gc
import multiprocessing as mp
import pickle
import threading

import numpy as np
import pytest

import slidegen
import tilewise
from conftest import assert_same


@pytest.fixture(scope="module")
def slide_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("loader") / "s.tif"
    slidegen.write_vips_pyramid(path, slidegen.tissue_image(1536, 1024, seed=10))
    return path


def locations_for(slide, n, level, size, seed):
    rng = np.random.default_rng(seed)
    w0, h0 = slide.dimensions
    ds = slide.levels[level].downsample
    # borders and outside included
    locs = [(0, 0), (w0 - int(size * ds) // 2, h0 - int(size * ds) // 2), (-20, -20)]
    locs += [(int(rng.integers(-100, w0)), int(rng.integers(-100, h0))) for _ in range(n - len(locs))]
    return locs


COMBOS = [
    dict(batch_size=1, num_workers=1, prefetch=1, shuffle=False, drop_last=False),
    dict(batch_size=7, num_workers=4, prefetch=2, shuffle=False, drop_last=False),
    dict(batch_size=7, num_workers=4, prefetch=2, shuffle=True, drop_last=False),
    dict(batch_size=16, num_workers=16, prefetch=4, shuffle=True, drop_last=True),
    dict(batch_size=64, num_workers=2, prefetch=1, shuffle=False, drop_last=False),
    dict(batch_size=5, num_workers=0, prefetch=3, shuffle=False, drop_last=True),
]


@pytest.mark.parametrize("options", COMBOS, ids=lambda o: "-".join(f"{k}{int(v)}" for k, v in o.items()))
@pytest.mark.parametrize("level", [0, 1, 2])
def test_batches_equal_single_reads(slide_path, options, level):
    slide = tilewise.open(slide_path)
    size = 96
    locs = locations_for(slide, 45, level, size, seed=level)
    it = slide.read_regions(locs, (size, size), level=level, seed=123, **options)
    n, b = len(locs), options["batch_size"]
    assert len(it) == (n // b if options["drop_last"] else -(-n // b))
    seen, batches = [], []
    for batch in it:
        assert batch.dtype == np.uint8 and batch.shape[1:] == (size, size, 3)
        batches.append((batch, list(it.last_indices)))
    assert len(batches) == len(it)
    for batch, indices in batches:  # earlier arrays are still valid after later batches were produced
        for array, i in zip(batch, indices):
            assert_same(array, slide.read_region(locs[i], (size, size), level=level), f"location {i}")
            seen.append(i)
    if options["shuffle"]:
        again = slide.read_regions(locs, (size, size), level=level, seed=123, **options)
        order = [i for _ in again for i in again.last_indices]
        assert order == seen, "the same seed gives the same order"
    else:
        assert seen == list(range(len(seen)))
    assert len(set(seen)) == len(seen)


def test_failed_items_raise_with_their_location(tmp_path, slide_path):
    data = bytearray(slide_path.read_bytes())
    slide = tilewise.open(slide_path)
    import tifffile

    with tifffile.TiffFile(slide_path) as tf:
        page = tf.pages[0]
        off, count = page.dataoffsets[7], page.databytecounts[7]  # tile (1, 1) of a 6-tile-wide level
    data[off : off + count] = b"\0" * count
    broken = tmp_path / "broken.tif"
    broken.write_bytes(bytes(data))
    bad = tilewise.open(broken)
    locs = [(0, 0), (300, 300), (600, 0)]  # the second hits tile (1, 1)
    it = bad.read_regions(locs, (64, 64), batch_size=1)
    first = next(it)
    assert_same(first[0], slide.read_region((0, 0), (64, 64)))
    with pytest.raises(tilewise.CorruptError, match=r"batch 1 item 0 \(location 1: 300, 300\).*level 0 tile \(1,1\)"):
        next(it)
    assert list(it.last_indices) == [1]  # the raised batch's locations
    third = next(it)  # the iterator goes on after an item error
    assert_same(third[0], slide.read_region((600, 0), (64, 64)))


def test_stopping_early_keeps_delivered_arrays_and_frees_the_rest(slide_path):
    slide = tilewise.open(slide_path)
    locs = locations_for(slide, 300, 0, 128, seed=3)
    kept = []
    for round_ in range(5):
        it = slide.read_regions(locs, (128, 128), batch_size=16, num_workers=8, prefetch=4)
        kept.append(next(it))
        it.close() if round_ % 2 else None
        del it
        gc.collect()
    for batch in kept:
        assert_same(batch[0], slide.read_region(locs[0], (128, 128)))


def test_concurrent_iterators_on_one_slide(slide_path):
    slide = tilewise.open(slide_path)
    locs = locations_for(slide, 60, 0, 64, seed=4)
    expected = [slide.read_region(l, (64, 64)) for l in locs]
    failures = []

    def consume(seed):
        it = slide.read_regions(locs, (64, 64), batch_size=8, num_workers=4, shuffle=True, seed=seed)
        for batch in it:
            for array, i in zip(batch, it.last_indices):
                if not np.array_equal(array, expected[i]):
                    failures.append(i)

    threads = [threading.Thread(target=consume, args=(s,)) for s in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def _worker_read(args):
    slide, loc = args
    return slide.read_region(loc, (64, 64)).tobytes()


def _worker_batches(slide):
    it = slide.read_regions([(0, 0), (512, 512), (1000, 700)], (64, 64), batch_size=2, num_workers=2)
    return [b.tobytes() for b in it]


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_slides_work_in_worker_processes(slide_path, method):
    slide = tilewise.open(slide_path)
    # The parent has used its pools, cache and loader threads before forking.
    list(slide.read_regions([(0, 0)] * 20, (64, 64), batch_size=4, num_workers=4))
    locs = [(0, 0), (100, 100), (1200, 900)]
    expected = [slide.read_region(l, (64, 64)).tobytes() for l in locs]
    ctx = mp.get_context(method)
    with ctx.Pool(2) as pool:
        got = pool.map(_worker_read, [(slide, l) for l in locs])
        batches = pool.map(_worker_batches, [slide, slide])
    assert got == expected
    want = [b.tobytes() for b in slide.read_regions([(0, 0), (512, 512), (1000, 700)], (64, 64), batch_size=2)]
    assert batches == [want, want]
    assert pickle.loads(pickle.dumps(slide)).dimensions == slide.dimensions
