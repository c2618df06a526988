"""Resident memory stays flat under repeated reads (the bounds are stated with each test).

After warm-up, everything tilewise keeps is bounded by design: the tile cache by its byte budget, the
pixel-buffer pool by its budget (released buffers are reused, not re-mapped), decoders and their scratch
by the number of threads. So after a warm-up phase the resident set must not grow beyond allocator noise.
A leak of one region per read (planted once on purpose: free_pixels turned into a no-op) fails each test
by a wide margin: 10 x 48 MiB, 10,000 x 192 KiB, 101 x 5 x 12 MiB.
"""

from __future__ import annotations

import gc

import numpy as np
import psutil
import pytest

import slidegen
import tilewise

MIB = 1 << 20


def rss() -> int:
    gc.collect()
    return psutil.Process().memory_info().rss


@pytest.fixture(scope="module")
def slide_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("memory") / "m.tif"
    slidegen.write_vips_pyramid(path, slidegen.tissue_image(4096, 4096, seed=11))
    return path


@pytest.fixture(autouse=True)
def bounded_cache():
    tilewise.set_cache_capacity(32 * MIB)
    yield
    tilewise.set_cache_capacity(256 * MIB)


def test_full_image_reads(slide_path):
    slide = tilewise.open(slide_path)
    w, h = slide.dimensions  # 48 MiB per read
    for _ in range(2):
        slide.read_region((0, 0), (w, h))
    base = rss()
    for _ in range(10):
        region = slide.read_region((0, 0), (w, h))
        del region
    growth = rss() - base
    # Bound: 16 MiB (allocator noise), a third of one region.
    assert growth < 16 * MIB, f"resident set grew by {growth / MIB:.1f} MiB over 10 full-image reads"


def test_random_reads_with_out_of_bounds_and_random_levels(slide_path):
    slide = tilewise.open(slide_path)
    rng = np.random.default_rng(0)
    w0, h0 = slide.dimensions

    def burst(n):
        for _ in range(n):
            level = int(rng.integers(0, slide.level_count))
            x, y = int(rng.integers(-300, w0 + 100)), int(rng.integers(-300, h0 + 100))
            slide.read_region((x, y), (256, 256), level=level)

    burst(2000)  # warm-up: cache fills to its budget, decoders and pools exist
    base = rss()
    burst(10000)
    growth = rss() - base
    # Bound: 24 MiB: the cache is already at its 32 MiB budget; the rest is allocator noise.
    assert growth < 24 * MIB, f"resident set grew by {growth / MIB:.1f} MiB over 10,000 reads"


def test_repeated_iterator_runs_with_16_workers(slide_path):
    slide = tilewise.open(slide_path)
    rng = np.random.default_rng(1)
    w0, h0 = slide.dimensions
    locations = np.stack([rng.integers(0, w0 - 256, 275), rng.integers(0, h0 - 256, 275)], axis=1)

    def run():
        for batch in slide.read_regions(locations, (256, 256), batch_size=64, num_workers=16, prefetch=2):
            assert batch.shape[1:] == (256, 256, 3)

    for _ in range(20):  # warm-up: 16 worker threads each grow a malloc arena over the first runs
        run()
    base = rss()
    for _ in range(101):
        run()
    growth = rss() - base
    # Bound: 32 MiB. Each run holds at most prefetch + 1 batches of 12 MiB, reused from the pixel pool.
    assert growth < 32 * MIB, f"resident set grew by {growth / MIB:.1f} MiB over 101 iterator runs"


def test_open_read_close_cycles_leak_neither_descriptors_nor_memory(slide_path):
    """10,000 open/read/close cycles: open file descriptors return to their count after each close, and the
    resident set stays within 16 MiB (a leaked slide would keep its model and descriptor: ~10,000 fds)."""
    process = psutil.Process()

    def cycle(n):
        for i in range(n):
            with tilewise.open(slide_path) as slide:
                slide.read_region((i % 3000, i % 2000), (64, 64))
            gc.collect() if i % 1000 == 0 else None

    cycle(500)
    fds, base = process.num_fds(), rss()
    cycle(10000)
    assert process.num_fds() == fds
    growth = rss() - base
    assert growth < 16 * MIB, f"resident set grew by {growth / MIB:.1f} MiB over 10,000 open/read/close cycles"
