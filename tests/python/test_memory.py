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


def test_16_threads_opening_reading_and_closing_slides_of_every_format_stay_bounded(tmp_path):
    """16 threads open, read and close slides of many formats (the corruption catalogue's good files and a
    larger JPEG 2000 and deflate pair) for 25 s. Everything tilewise keeps is bounded (the tile cache at
    32 MiB, closed slides' MCU index entries dropped, decoders per thread), and freed memory goes back to
    the system when slides close (util/heap_trim.h). Bounds: after a 10 s warm-up the resident set is
    within 160 MiB of where it was before the threads started (about 70 on 2 cores; about 470, and rising
    4 MiB a second, when glibc's per-thread arenas keep what was freed), and at the end within 48 MiB of its
    level after the warm-up, as the median of the last five one-second samples (8 MiB of leak per second would
    fail it; one sample's spike as the threads end does not)."""
    import glob
    import os
    import random
    import threading
    import time

    import vendor_tiff

    catalogue = os.environ.get("TILEWISE_CATALOGUE_DIR")
    if not catalogue:
        pytest.skip("the corruption catalogue (TILEWISE_CATALOGUE_DIR, built by scripts/test.sh) is not set")
    paths = []
    for p in sorted(glob.glob(os.path.join(catalogue, "good-*"))):
        if os.path.isdir(p):
            inner = sorted(f for f in glob.glob(os.path.join(p, "*")) if f.endswith((".mrxs", ".vms", ".vmu", ".dcm")))
            paths += inner[:1]
        elif not p.endswith(".Full"):
            paths.append(p)
    assert len(paths) > 25, paths
    image = slidegen.tissue_image(2048, 1536, seed=9)
    vendor_tiff.write_aperio(tmp_path / "j2k.svs", image, codec="j2k-ycbcr", tile=240)
    slidegen.write_vips_pyramid(tmp_path / "deflate.tif", image, tile=256, compression="deflate")
    paths += [str(tmp_path / "j2k.svs"), str(tmp_path / "deflate.tif")]

    for path in paths:  # every format's code and tables once, before the baseline
        tilewise.open(path).read_region((0, 0), (256, 256))
    baseline = rss()
    stop = time.monotonic() + 25
    counts = {"opens": 0, "errors": []}

    def work(seed):
        rng = random.Random(seed)
        while time.monotonic() < stop:
            path = rng.choice(paths)
            try:
                slide = tilewise.open(path)
                counts["opens"] += 1
                for _ in range(4):
                    level = rng.randrange(slide.level_count)
                    w, h = slide.dimensions
                    slide.read_region((rng.randrange(w), rng.randrange(h)), (256, 256), level=level)
                del slide
            except tilewise.TilewiseError as e:
                counts["errors"].append(f"{path}: {e}")

    threads = [threading.Thread(target=work, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    time.sleep(10)
    warm = psutil.Process().memory_info().rss
    samples = []
    while any(t.is_alive() for t in threads):
        time.sleep(1)
        samples.append(psutil.Process().memory_info().rss)
    for t in threads:
        t.join()
    assert counts["errors"] == [] and counts["opens"] > 500, counts
    shown = (round(baseline / MIB), round(warm / MIB), [round(s / MIB) for s in samples])
    assert warm - baseline < 160 * MIB, shown  # freed memory returned (~70 MiB above; ~470 when arenas kept it)
    assert sorted(samples[-5:])[2] - warm < 48 * MIB, shown  # no growth after the warm-up (median of the last 5 s)
