"""GPU path (device="cuda"): results against the CPU path, interop, concurrency and device memory.

Runs on a machine with an NVIDIA GPU and nvImageCodec 0.8 (scripts/gpu/test.sh); skips with the reason
everywhere else (CI has no GPU). Slides come from TILEWISE_GPU_DATA (default .gpu/data, made on the
developer machine by scripts/gpu/prepare.sh); a test whose slide is missing skips, saying so.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

import tilewise

tilewise._gpu.configure()
STATUS = tilewise._core.gpu_status(0)
pytestmark = pytest.mark.skipif(not STATUS.ok, reason=f"no usable GPU: {STATUS.message}")

DATA = Path(os.environ.get("TILEWISE_GPU_DATA", Path(__file__).resolve().parents[2] / ".gpu" / "data"))
# Device pixels within 3 levels of the CPU path's: nvJPEG's and libjpeg-turbo's IDCT rounding differ by at
# most 1 on these slides (0.02% of samples), nvJPEG2000's and OpenJPEG's inverse transforms by at most 2
# (bench/RESULTS.md, "H100: device pixels against the CPU path's").
JPEG_TOLERANCE = 3
J2K_TOLERANCE = 3


def to_host(array) -> np.ndarray:
    import cupy

    return cupy.asnumpy(cupy.from_dlpack(array))


def slide(name: str) -> tilewise.Slide:
    path = DATA / name
    if not path.exists():
        pytest.skip(f"{path} is missing (scripts/gpu/prepare.sh makes .gpu/data on the developer machine)")
    return tilewise.open(path)


def regions(s, level, rng, n=20):
    lw, lh = s.levels[level].dimensions
    ds = s.levels[level].downsample
    cases = [(0, 0, lw, lh), (0, 0, 256, 256), (-30, -20, 100, 90), (lw - 50, lh - 40, 200, 100), (lw + 5, 0, 10, 10)]
    for _ in range(n):
        w, h = int(rng.integers(1, 600)), int(rng.integers(1, 600))
        cases.append((int(rng.integers(-w // 2, lw)), int(rng.integers(-h // 2, lh)), w, h))
    return [(int(x * ds), int(y * ds), w, h) for x, y, w, h in cases]


@pytest.mark.parametrize("name,tolerance,on_gpu", [
    ("tifffile_jpeg.tif", JPEG_TOLERANCE, True), ("vips_jpeg.tif", JPEG_TOLERANCE, True),
    ("aperio_rgb.svs", 0, False), ("aperio_j2k_ycbcr.svs", J2K_TOLERANCE, True),
    ("aperio_j2k_rgb.svs", J2K_TOLERANCE, True), ("deflate.tif", 0, False),
    # DICOM: JPEG frames behind a Basic Offset Table (item runs joined when read), JPEG 2000, and JPEG-LS,
    # which no GPU decoder takes (every tile on the CPU, then uploaded).
    ("dicom_jpeg/slide-level0.dcm", JPEG_TOLERANCE, True), ("dicom_j2k/slide-level0.dcm", J2K_TOLERANCE, True),
    ("dicom_jpegls/slide-level0.dcm", 0, False)])
def test_device_reads_match_the_cpu_path(name, tolerance, on_gpu):
    s = slide(name)
    rng = np.random.default_rng(0)
    worst = 0
    before = tilewise._core.gpu_stats(0)
    for level in range(s.level_count):
        for x, y, w, h in regions(s, level, rng):
            gpu = s.read_region((x, y), (w, h), level=level, device="cuda")
            assert gpu.shape == (h, w, 3)
            cpu = s.read_region((x, y), (w, h), level=level)
            diff = np.abs(to_host(gpu).astype(int) - cpu.astype(int))
            worst = max(worst, int(diff.max()) if diff.size else 0)
            assert worst <= tolerance, f"{name} level {level} ({x},{y}) {w}x{h}: max difference {worst}"
    after = tilewise._core.gpu_stats(0)
    gpu_tiles = after["gpu_tiles"] - before["gpu_tiles"]
    print(f"\n{name}: max |device - CPU| = {worst}; tiles decoded by the GPU lanes: {gpu_tiles}, "
          f"by reading threads on the CPU: {after['cpu_tiles'] - before['cpu_tiles']}")
    # The GPU decoders must really have been used where they apply (a silent CPU fallback would pass above).
    assert (gpu_tiles > 0) == on_gpu


def test_cuda_alone_names_the_current_device():
    """"cuda" without an index is the thread's current device (torch.cuda.set_device's), as in PyTorch."""
    torch = pytest.importorskip("torch")
    for index in range(torch.cuda.device_count()):
        torch.cuda.set_device(index)
        assert tilewise._gpu.parse_device("cuda") == ("cuda", index)
        region = slide("vips_jpeg.tif").read_region((0, 0), (64, 64), device="cuda")
        assert region.device == f"cuda:{index}"
    torch.cuda.set_device(0)


def test_interop_with_cupy_and_torch():
    import cupy

    s = slide("vips_jpeg.tif")
    gpu = s.read_region((100, 100), (300, 200), device="cuda:0")
    a = cupy.asarray(gpu)  # __cuda_array_interface__
    b = cupy.from_dlpack(gpu)
    assert a.shape == (200, 300, 3) and a.dtype == cupy.uint8
    assert int(a.data.ptr) == int(b.data.ptr) == gpu.__cuda_array_interface__["data"][0]
    assert gpu.__dlpack_device__()[0] == 2  # kDLCUDA
    try:
        import torch
    except ImportError:
        return
    t = torch.from_dlpack(gpu)
    assert t.is_cuda and tuple(t.shape) == (200, 300, 3)
    assert int(t.data_ptr()) == int(a.data.ptr)


@pytest.mark.parametrize("threads", [16, 64])
def test_concurrent_device_reads(threads):
    s = slide("vips_jpeg.tif")
    rng = np.random.default_rng(threads)
    w0, h0 = s.dimensions
    locs = [(int(rng.integers(-100, w0)), int(rng.integers(-100, h0))) for _ in range(threads * 4)]
    expected = {loc: s.read_region(loc, (256, 256)) for loc in locs}
    errors = []

    def work(loc):
        got = to_host(s.read_region(loc, (256, 256), device="cuda"))
        if np.abs(got.astype(int) - expected[loc].astype(int)).max() > JPEG_TOLERANCE:
            errors.append(loc)

    before = tilewise._core.gpu_stats(0)
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(work, locs))
    assert errors == []
    after = tilewise._core.gpu_stats(0)
    print(f"\n{threads} threads: {after['gpu_tiles'] - before['gpu_tiles']} tiles on the GPU lanes, "
          f"{after['cpu_tiles'] - before['cpu_tiles']} on the reading threads' CPUs, "
          f"{after['batches'] - before['batches']} batches, {after['lanes']} lanes")


def test_device_and_host_memory_are_flat():
    import cupy
    import psutil

    s = slide("bench_ihc_6144.tif")
    w, h = s.dimensions
    free = lambda: cupy.cuda.runtime.memGetInfo()[0]  # noqa: E731
    for _ in range(3):
        del_ = s.read_region((0, 0), (w, h), device="cuda")
        del del_
    base = free()
    for _ in range(30):
        region = s.read_region((0, 0), (w, h), device="cuda")
        del region
    assert base - free() < 64 << 20, "device memory grew over 30 full-image reads"
    rng = np.random.default_rng(1)
    # Warm-up as long as the measured loop is varied: the device tile cache (bounded) fills with the slide's
    # cut tiles here, so growth afterwards would be a leak.
    for _ in range(3000):
        s.read_region((int(rng.integers(-200, w)), int(rng.integers(-200, h))), (256, 256),
                      level=int(rng.integers(0, s.level_count)), device="cuda")
    base = free()
    rss = psutil.Process().memory_info().rss
    for _ in range(10000):
        s.read_region((int(rng.integers(-200, w)), int(rng.integers(-200, h))), (256, 256),
                      level=int(rng.integers(0, s.level_count)), device="cuda")
    assert base - free() < 64 << 20, "device memory grew over 10,000 random reads"
    grown = psutil.Process().memory_info().rss - rss
    print(f"\nover 10,000 random device reads: device memory {(base - free()) / 2**20:+.1f} MiB, "
          f"host RSS {grown / 2**20:+.1f} MiB")
    assert grown < 64 << 20, "host memory grew over 10,000 random device reads"


@pytest.mark.parametrize("name,tolerance", [("vips_jpeg.tif", JPEG_TOLERANCE), ("deflate.tif", 0)])
def test_device_batches_match_cpu_batches(name, tolerance):
    s = slide(name)
    rng = np.random.default_rng(5)
    w0, h0 = s.dimensions
    locs = [(int(rng.integers(-100, w0)), int(rng.integers(-100, h0))) for _ in range(70)]
    cpu = list(s.read_regions(locs, (128, 96), batch_size=16, num_workers=4, shuffle=True, seed=3))
    it = s.read_regions(locs, (128, 96), batch_size=16, num_workers=4, shuffle=True, seed=3, device="cuda")
    gpu = [to_host(b) for b in it]
    assert len(gpu) == len(cpu) == 5
    for a, b in zip(gpu, cpu):
        assert a.shape == b.shape
        assert np.abs(a.astype(int) - b.astype(int)).max() <= tolerance


def _damage_tile(src: Path, dst: Path, tx: int, ty: int) -> tuple:
    """Copies src to dst with level 0's tile (tx, ty) cut to 10 bytes; returns (tile width, tile height)."""
    import shutil
    import struct

    import tifffile

    shutil.copy(src, dst)
    with tifffile.TiffFile(dst) as tf:
        page = tf.pages[0]
        counts = page.tags["TileByteCounts"]
        across = -(-page.imagewidth // page.tilewidth)
        size = 8 if counts.dtype in (16, 17) else 4  # LONG8 / IFD8 in a BigTIFF
        at, tile = counts.valueoffset + size * (ty * across + tx), (page.tilewidth, page.tilelength)
    with open(dst, "r+b") as f:
        f.seek(at)
        f.write(struct.pack("<Q" if size == 8 else "<I", 10))
    return tile


def test_hybrid_device_loader_equals_the_cpu_and_fails_only_the_damaged_batch(tmp_path):
    """A device loader with more workers than batches in flight reads part of each batch on the CPU (helpers
    from the back, the GPU from the front, batch_claims.h): its batches equal the CPU loader's; a region on a
    damaged tile fails its own batch with the CPU's error, read by whichever side took it, and the rest go on."""
    src = DATA / "vips_jpeg.tif"
    if not src.exists():
        pytest.skip(f"{src} is missing")
    tw, th = _damage_tile(src, tmp_path / "damaged.tif", 2, 1)
    s = tilewise.open(tmp_path / "damaged.tif")
    saved = tilewise.cache_capacity()
    tilewise.set_cache_capacity(0)
    try:
        w0, h0 = s.dimensions
        rng = np.random.default_rng(11)
        bad = (2 * tw, 1 * th, 3 * tw, 2 * th)  # the damaged tile's bounds

        def good():
            while True:
                x, y = int(rng.integers(0, w0 - 128)), int(rng.integers(0, h0 - 96))
                if x + 128 <= bad[0] or x >= bad[2] or y + 96 <= bad[1] or y >= bad[3]:
                    return x, y

        locs = [good() for _ in range(16 * 12)]
        tiles = sum(len({((x + dx) // tw, (y + dy) // th) for x, y in locs[b:b + 16] for dx in (0, 127) for dy in (0, 95)})
                    for b in range(0, len(locs), 16))
        cpu = list(s.read_regions(locs, (128, 96), batch_size=16, num_workers=4))
        for workers in (1, 8):  # 1: the GPU alone (no helper); 8: three helpers beside the GPU tasks
            before = tilewise._core.gpu_stats(0)
            gpu = [to_host(b) for b in s.read_regions(locs, (128, 96), batch_size=16, num_workers=workers, device="cuda")]
            after = tilewise._core.gpu_stats(0)
            lanes = (after["gpu_tiles"] + after["cpu_tiles"]) - (before["gpu_tiles"] + before["cpu_tiles"])
            helped = after["loader_cpu_regions"] - before["loader_cpu_regions"]
            assert len(gpu) == len(cpu) == 12
            for a, b in zip(gpu, cpu):
                assert np.abs(a.astype(int) - b.astype(int)).max() <= JPEG_TOLERANCE
            if workers == 1:
                assert lanes == tiles, "without helpers the lanes decode every distinct tile of each batch"
                assert helped == 0
            else:
                assert helped > 0, "the helpers read none of the regions"
        # Item 5 of batch 7 sits on the damaged tile.
        locs[7 * 16 + 5] = (bad[0] + 10, bad[1] + 10)
        with pytest.raises(tilewise.TilewiseError) as cpu_error:
            list(s.read_regions(locs, (128, 96), batch_size=16, num_workers=4))
        it = iter(s.read_regions(locs, (128, 96), batch_size=16, num_workers=8, device="cuda"))
        for b in range(7):
            assert np.abs(to_host(next(it)).astype(int) - cpu[b].astype(int)).max() <= JPEG_TOLERANCE
        with pytest.raises(type(cpu_error.value)) as gpu_error:
            next(it)
        assert "batch 7 item 5" in str(gpu_error.value) and "tile (2,1)" in str(gpu_error.value)
        for b in range(8, 12):
            assert np.abs(to_host(next(it)).astype(int) - cpu[b].astype(int)).max() <= JPEG_TOLERANCE
    finally:
        tilewise.set_cache_capacity(saved)


def test_cucim_module_reads_to_the_device():
    import cupy
    from tilewise.cucim import CuImage

    img = CuImage(str(slide("vips_jpeg.tif")._path))
    region = img.read_region((100, 50), (300, 200), device="cuda")
    assert str(region.device) == "cuda" and region.shape == [200, 300, 3]
    cpu = np.asarray(img.read_region((100, 50), (300, 200)))
    got = cupy.asnumpy(cupy.asarray(region))
    assert np.abs(got.astype(int) - cpu.astype(int)).max() <= JPEG_TOLERANCE
    with pytest.raises(TypeError, match="GPU memory"):
        np.asarray(region)
    locs = [(0, 0), (256, 256), (1000, 700), (40, 900)]
    singles = list(img.read_region(locs, (128, 128), batch_size=1, num_workers=2, device="cuda"))
    batches = list(img.read_region(locs, (128, 128), batch_size=2, num_workers=2, device="cuda"))
    assert [r.shape for r in singles] == [[128, 128, 3]] * 4 and [b.shape for b in batches] == [[2, 128, 128, 3]] * 2
    for i, loc in enumerate(locs):
        want = np.asarray(img.read_region(loc, (128, 128))).astype(int)
        assert np.abs(cupy.asnumpy(cupy.asarray(singles[i])).astype(int) - want).max() <= JPEG_TOLERANCE
        got = cupy.asnumpy(cupy.asarray(batches[i // 2]))[i % 2].astype(int)
        assert np.abs(got - want).max() <= JPEG_TOLERANCE


def test_device_tile_cache_serves_overlapping_reads():
    s = slide("vips_jpeg.tif")
    saved = tilewise.cache_capacity()
    tilewise.set_cache_capacity(256 << 20)  # the device tile cache follows tilewise's cache switch
    locs = [(100 + 37 * i, 90 + 23 * i) for i in range(12)]  # overlapping unaligned patches
    before = tilewise._core.gpu_stats(0)
    first = [to_host(s.read_region(loc, (200, 150), device="cuda")) for loc in locs]
    again = [to_host(s.read_region(loc, (200, 150), device="cuda")) for loc in locs]
    after = tilewise._core.gpu_stats(0)
    hits = after["tile_cache_hits"] - before["tile_cache_hits"]
    print(f"\ndevice tile cache: {hits} hits, {after['tile_cache_misses'] - before['tile_cache_misses']} misses, "
          f"{after['tile_cache_bytes'] / 2**20:.1f} MiB held")
    assert hits >= len(locs)  # every repeated read composes from cached tiles
    for loc, a, b in zip(locs, first, again):
        assert np.array_equal(a, b), loc  # the same decoded tiles
        cpu = s.read_region(loc, (200, 150))
        assert np.abs(a.astype(int) - cpu.astype(int)).max() <= JPEG_TOLERANCE
    tilewise.set_cache_capacity(0)
    before = tilewise._core.gpu_stats(0)
    s.read_region(locs[0], (200, 150), device="cuda")
    assert tilewise._core.gpu_stats(0)["tile_cache_hits"] == before["tile_cache_hits"]  # off with the cache
    tilewise.set_cache_capacity(saved)


def test_errors_stay_clear():
    s = slide("vips_jpeg.tif")
    with pytest.raises(tilewise.InvalidArgumentError):
        s.read_region((0, 0), (10, 10), device="cuda:99")
    with pytest.raises(ValueError):
        s.read_region((0, 0), (10, 10), level=9, device="cuda")


def _child_reads(path, queue):
    s = tilewise.open(path)
    cpu = s.read_region((0, 0), (64, 64))
    try:
        s.read_region((0, 0), (64, 64), device="cuda")
        queue.put(("device read worked", int(cpu.sum())))
    except tilewise.TilewiseError as e:  # CUDA cannot be used again in a child forked after initialisation
        queue.put((f"{type(e).__name__}: {e}", int(cpu.sum())))


def test_forked_children_get_a_clear_error_or_work():
    import multiprocessing

    s = slide("vips_jpeg.tif")
    s.read_region((0, 0), (256, 256), device="cuda")  # the parent's lanes and CUDA context exist
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    p = ctx.Process(target=_child_reads, args=(str(DATA / "vips_jpeg.tif"), queue))
    p.start()
    p.join(60)
    assert p.exitcode == 0, f"forked child crashed or hung (exit code {p.exitcode})"
    outcome, checksum = queue.get(timeout=5)
    print(f"\nforked child: {outcome}")
    assert checksum == int(s.read_region((0, 0), (64, 64)).sum())
    # The parent still works after the child.
    assert s.read_region((0, 0), (64, 64), device="cuda").shape == (64, 64, 3)


def generators():
    """tests/data's slide generators (skips where Pillow or numpy are missing)."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "data"))
    return pytest.importorskip("ndpi"), pytest.importorskip("vms"), pytest.importorskip("slidegen")


def expect_device_equals_cpu(s, rng, exact, n, patch, batch_size):
    """Regions of every level and a loader's batches read to the device equal the CPU's (within JPEG_TOLERANCE,
    exactly on the levels `exact(level)` names: decoded on the CPU), and the lanes decoded some tiles."""
    before = tilewise._core.gpu_stats(0)
    for level in range(s.level_count):
        for x, y, w, h in regions(s, level, rng, n=n):
            gpu = to_host(s.read_region((x, y), (w, h), level=level, device="cuda"))
            cpu = s.read_region((x, y), (w, h), level=level)
            diff = int(np.abs(gpu.astype(int) - cpu.astype(int)).max()) if cpu.size else 0
            assert diff <= (0 if exact(level) else JPEG_TOLERANCE), f"level {level} ({x},{y}) {w}x{h}: {diff}"
    assert tilewise._core.gpu_stats(0)["gpu_tiles"] > before["gpu_tiles"]
    w0, h0 = s.dimensions
    locs = [(int(rng.integers(0, w0 - patch[0])), int(rng.integers(0, h0 - patch[1]))) for _ in range(3 * batch_size)]
    gpu = [to_host(b) for b in s.read_regions(locs, patch, batch_size=batch_size, device="cuda")]
    cpu = list(s.read_regions(locs, patch, batch_size=batch_size))
    assert len(gpu) == len(cpu) == 3
    for a, b in zip(gpu, cpu):
        assert np.abs(a.astype(int) - b.astype(int)).max() <= JPEG_TOLERANCE


@pytest.mark.parametrize("subsampling", ["4:2:2", "4:2:0"])
def test_ndpi_restart_intervals_on_the_device(tmp_path, subsampling):
    """NDPI units (restart intervals behind the image's header) are complete JPEGs: the lanes decode them,
    through single reads and device batches; the derived 1/2-1/8 levels fall back to the CPU exactly."""
    ndpi, _, slidegen = generators()
    path = tmp_path / "slide.ndpi"
    ndpi.write_ndpi(path, slidegen.tissue_image(2048, 1536, seed=5), levels=3, restart_interval=8,
                    subsampling=subsampling)
    # Levels 0-2 are stored, 3-5 derived by DCT scaling (decoded on the CPU).
    expect_device_equals_cpu(tilewise.open(path), np.random.default_rng(1), lambda level: level >= 3, 8,
                             (128, 128), 32)


def test_vms_units_from_many_files_on_the_device(tmp_path):
    """A VMS set: level 0's units come from four JPEG files, each with its own header; the lanes decode
    them through single reads and device batches; the derived levels fall back to the CPU exactly."""
    _, vms, slidegen = generators()
    s = tilewise.open(vms.write_vms(tmp_path, slidegen.tissue_image(2048, 1536, seed=6), cols=2, rows=2,
                                    restart_interval=16, subsampling="4:2:2"))
    # Stored units are 8 rows high (4:2:2): a level with shorter ones is derived (decoded on the CPU).
    expect_device_equals_cpu(s, np.random.default_rng(2), lambda level: s.levels[level].tile_size[1] < 8, 6,
                             (160, 96), 16)


@pytest.mark.parametrize("name,on_gpu", [
    ("mirax_jpeg/slide.mrxs", True), ("mirax_png/slide.mrxs", False), ("leica.scn", True), ("ventana.bif", True),
    ("trestle.tif", True), ("sakura.svslide", False), ("zeiss.czi", False)])
def test_formats_iv_on_the_device(name, on_gpu):
    """MIRAX, Leica, Ventana BIF and Trestle levels are positioned grids (tiles at their own places,
    overlapping): single device reads and device batches equal the CPU path's; the lanes decode their JPEG
    units in batches. PNG units, Sakura's channel planes and CZI's subblocks have no GPU decoder: CPU, then
    uploaded."""
    s = slide(name)
    rng = np.random.default_rng(7)
    before = tilewise._core.gpu_stats(0)["gpu_tiles"]
    for level in range(s.level_count):
        for x, y, w, h in regions(s, level, rng, n=8):
            gpu = to_host(s.read_region((x, y), (w, h), level=level, device="cuda"))
            cpu = s.read_region((x, y), (w, h), level=level)
            diff = int(np.abs(gpu.astype(int) - cpu.astype(int)).max()) if cpu.size else 0
            assert diff <= JPEG_TOLERANCE, f"{name} level {level} ({x},{y}) {w}x{h}: {diff}"
    w0, h0 = s.dimensions
    locs = [(int(rng.integers(-64, w0)), int(rng.integers(-64, h0))) for _ in range(48)]
    for level in (0, s.level_count - 1):
        gpu = [to_host(b) for b in s.read_regions(locs, (160, 96), level=level, batch_size=16, device="cuda")]
        cpu = list(s.read_regions(locs, (160, 96), level=level, batch_size=16))
        assert len(gpu) == len(cpu) == 3
        for a, b in zip(gpu, cpu):
            assert np.abs(a.astype(int) - b.astype(int)).max() <= JPEG_TOLERANCE, (name, level)
    assert (tilewise._core.gpu_stats(0)["gpu_tiles"] > before) == on_gpu


def open_remote(url: str) -> tilewise.Slide:
    """The slide at `url`; the test is skipped by a build without libcurl."""
    try:
        return tilewise.open(url)
    except tilewise.UnsupportedError as e:
        pytest.skip(str(e))


def test_remote_slides_on_the_device():
    """A slide over HTTP (tests/data/range_server.py on the loopback address): single device reads and
    device batches equal the local file's CPU reads, the lanes decode the tiles, and a batch's tiles are
    fetched together (prefetched: far fewer requests than tiles)."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "data"))
    from range_server import RangeServer

    local = slide("vips_jpeg.tif")
    server = RangeServer(DATA)
    url = server.start()
    capacity = tilewise.cache_capacity()
    try:
        tilewise.set_cache_capacity(0)
        remote = open_remote(f"{url}/vips_jpeg.tif")
        assert remote.levels == local.levels
        rng = np.random.default_rng(11)
        before = tilewise._core.gpu_stats(0)["gpu_tiles"]
        for level in range(local.level_count):
            for x, y, w, h in regions(local, level, rng, n=6):
                gpu = to_host(remote.read_region((x, y), (w, h), level=level, device="cuda"))
                cpu = local.read_region((x, y), (w, h), level=level)
                diff = int(np.abs(gpu.astype(int) - cpu.astype(int)).max()) if cpu.size else 0
                assert diff <= JPEG_TOLERANCE, (level, x, y, w, h, diff)
        # A batch of 64 patches of the 6144^2 slide, read by a fresh open each way: the device batch fetches
        # its tiles together, as exactly as the host path fetches each region's (without the prefetch, each
        # tile would fetch the 256 KiB block around it).
        big = slide("bench_ihc_6144.tif")
        w0, h0 = big.dimensions
        locs = [(int(rng.integers(0, w0 - 256)), int(rng.integers(0, h0 - 256))) for _ in range(64)]
        fetched = {}
        for device in ("cpu", "cuda"):
            r = tilewise.open(f"{url}/bench_ihc_6144.tif")
            start = dict(server.stats)
            out = list(r.read_regions(locs, (256, 256), batch_size=64, device=device))
            fetched[device] = (server.stats["requests"] - start["requests"], server.stats["bytes"] - start["bytes"])
            assert len(out) == 1
            fetched[device + "_pixels"] = out[0] if device == "cpu" else to_host(out[0])
        expected = list(big.read_regions(locs, (256, 256), batch_size=64))[0]
        assert np.array_equal(fetched["cpu_pixels"], expected)
        assert np.abs(fetched["cuda_pixels"].astype(int) - expected.astype(int)).max() <= JPEG_TOLERANCE
        assert tilewise._core.gpu_stats(0)["gpu_tiles"] > before
        # Within half again of the host path's, requests as bytes: a tile the calling thread decodes on the
        # CPU while the lanes are busy (the assist, gpu/tile_lanes.h) decodes the bytes its job holds, so it
        # is not read again through the tile fetcher.
        (cpu_requests, cpu_bytes), (gpu_requests, gpu_bytes) = fetched["cpu"], fetched["cuda"]
        assert 1 <= gpu_requests <= 1.5 * cpu_requests and gpu_bytes <= 1.5 * cpu_bytes, (fetched["cpu"], fetched["cuda"])
    finally:
        tilewise.set_cache_capacity(capacity)
        server.stop()


@pytest.mark.parametrize("name,tolerance", [("dicom_jpeg", JPEG_TOLERANCE), ("dicom_j2k", J2K_TOLERANCE)])
def test_dicomweb_series_on_the_device(name, tolerance):
    """A DICOMweb series (Orthanc's answers recorded by scripts/gpu/prepare.sh and served again by
    tests/data/dicomweb_replay.py: the machine has no Orthanc): device reads and device batches equal the
    local folder's CPU reads, and the lanes decode its frames."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "data"))
    from dicomweb_replay import ReplayServer

    recorded = DATA / "dicomweb" / name
    if not recorded.is_dir():
        pytest.fail(f"{recorded} is missing: run scripts/gpu/prepare.sh")
    local = tilewise.open(DATA / name)
    server = ReplayServer(recorded)
    url = server.start()
    capacity = tilewise.cache_capacity()
    try:
        tilewise.set_cache_capacity(0)
        remote = open_remote(url)
        assert remote.levels == local.levels
        before = tilewise._core.gpu_stats(0)["gpu_tiles"]
        rng = np.random.default_rng(13)
        for level in range(local.level_count):
            for x, y, w, h in regions(local, level, rng, n=5):
                gpu = to_host(remote.read_region((x, y), (w, h), level=level, device="cuda"))
                cpu = local.read_region((x, y), (w, h), level=level)
                diff = int(np.abs(gpu.astype(int) - cpu.astype(int)).max()) if cpu.size else 0
                assert diff <= tolerance, (level, x, y, w, h, diff)
        w0, h0 = local.dimensions
        locs = [(int(rng.integers(0, w0 - 256)), int(rng.integers(0, h0 - 256))) for _ in range(32)]
        gpu = to_host(list(remote.read_regions(locs, (256, 256), batch_size=32, device="cuda"))[0])
        cpu = list(local.read_regions(locs, (256, 256), batch_size=32))[0]
        assert np.abs(gpu.astype(int) - cpu.astype(int)).max() <= tolerance
        assert tilewise._core.gpu_stats(0)["gpu_tiles"] > before
    finally:
        tilewise.set_cache_capacity(capacity)
        server.stop()


# Reads channels of a VSI to the device and on the host in a child process under a GPU policy; prints the
# largest difference, the dtypes' agreement and the gpu_stats counts the reads added.
_PLANES_CHILD = r"""
import json, sys
import cupy
import numpy as np
import tilewise
tilewise._gpu.configure()
s = tilewise.open(sys.argv[1])
before = tilewise._core.gpu_stats(0)
cases = [((0, 0), (800, 600), 0, None, 1), ((100, 50), (300, 200), 0, [2, 0], 0), ((-20, -10), (64, 48), 1, 1, 1),
         ((700, 500), (200, 200), 0, None, 0), ((130, 140), (100, 90), 0, 2, 1), ((0, 0), (800, 600), 0, [1], 0),
         ((256, 128), (256, 256), 0, None, 1), ((5, 7), (400, 300), 1, None, 0)]
diff, same_type = 0, True
for loc, size, level, c, z in cases:
    gpu = s.read_region(loc, size, level=level, device="cuda", c=c, z=z)
    cpu = s.read_region(loc, size, level=level, c=c, z=z)
    host = cupy.asnumpy(cupy.from_dlpack(gpu))
    same_type &= gpu.dtype == cpu.dtype == host.dtype and host.shape == cpu.shape
    diff = max(diff, int(np.abs(host.astype(np.int64) - cpu.astype(np.int64)).max()))
after = tilewise._core.gpu_stats(0)
print(json.dumps({"diff": diff, "same_type": bool(same_type), "reads": len(cases),
                  "host_plane_regions": after["host_plane_regions"] - before["host_plane_regions"],
                  "gpu_tiles": after["gpu_tiles"] - before["gpu_tiles"]}))
"""


def _child(code: str, path: Path, **settings: str) -> dict:
    """Runs `code` on `path` in a fresh process under the settings (environment variables); its last line, JSON."""
    import json
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", code, str(path)], env=dict(os.environ, **settings), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _planes_child(path: Path, policy: str) -> dict:
    return _child(_PLANES_CHILD, path, TILEWISE_GPU_POLICY=policy)


@pytest.mark.parametrize("codec,dtype", [("j2k", np.uint16), ("j2k12", np.uint16), ("j2k", np.uint8), ("jpeg", np.uint8)])
def test_grey_jpeg_2000_and_jpeg_channels_are_decoded_on_the_gpu(codec, dtype):
    """Channels and planes of grey JPEG 2000 (16-bit, 12-bit precision in 16 bits, 8-bit) and grey JPEG tiles
    (Olympus VSI of 3 channels x 2 focal planes of 128-pixel tiles, scripts/gpu/prepare.sh): with the lanes
    forced, every read is decoded by nvImageCodec into the samples' type, equal to the host read (JPEG within
    its IDCT's rounding) and counted as the lanes' tiles, none as host plane reads. By default the scheduler
    races the two sides: the first reads go to the lanes, the next to the CPU (counted as host plane reads),
    then the faster side; the pixels are the same either way."""
    path = DATA / f"planes_{codec}_{np.dtype(dtype).name}.vsi"
    if not path.exists():
        pytest.skip(f"{path} is missing (scripts/gpu/prepare.sh makes .gpu/data on the developer machine)")
    tolerance = JPEG_TOLERANCE if codec == "jpeg" else 0
    forced = _planes_child(path, "gpu")
    assert forced["same_type"] and forced["diff"] <= tolerance, forced
    assert forced["host_plane_regions"] == 0 and forced["gpu_tiles"] > 0, forced
    raced = _planes_child(path, "auto")
    assert raced["same_type"] and raced["diff"] <= tolerance, raced
    assert raced["gpu_tiles"] > 0 and raced["host_plane_regions"] >= 3, raced


@pytest.mark.parametrize("dtype", [np.uint16, np.float32])
def test_channels_and_planes_reach_the_device_through_the_host(tmp_path, dtype):
    """Channels and focal planes of a codec no GPU decoder takes (a raw Olympus VSI of 3 channels x 2
    planes) are decoded on the CPU and uploaded once: the device result equals the host read, in the image's sample type, and gpu_stats counts
    every such read (none is hidden among the lanes' tiles)."""
    import sys

    import cupy

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "data"))
    import vsi

    rng = np.random.default_rng(5)
    world = (rng.random((3, 2, 700, 900)) * 60000).astype(dtype)
    path = tmp_path / "planes.vsi"
    vsi.write_vsi(path, world, tile=128, codec="raw")
    s = tilewise.open(path)
    before = tilewise._core.gpu_stats(0)
    cases = [((0, 0), (900, 700), 0, None, 1), ((100, 50), (300, 200), 0, [2, 0], 0),
             ((-20, -10), (64, 48), 1, 1, 1), ((800, 600), (200, 200), 0, None, 0)]
    for loc, size, level, c, z in cases:
        gpu = s.read_region(loc, size, level=level, device="cuda", c=c, z=z)
        cpu = s.read_region(loc, size, level=level, c=c, z=z)
        assert gpu.dtype == cpu.dtype == np.dtype(dtype) and gpu.shape == cpu.shape
        np.testing.assert_array_equal(to_host(gpu), cpu)
        assert cupy.asarray(gpu).dtype == np.dtype(dtype)  # through __cuda_array_interface__
    after = tilewise._core.gpu_stats(0)
    assert after["host_plane_regions"] - before["host_plane_regions"] == len(cases)
    assert after["gpu_tiles"] == before["gpu_tiles"]
    with pytest.raises(tilewise.InvalidArgumentError, match="host memory"):
        s.read_region((0, 0), (8, 8), c=0, device="cuda", out=np.empty((8, 8, 1), dtype))


_BLOCKING_SYNC_CHILD = r"""
import ctypes, json, sys
import numpy as np
import tilewise
tilewise._gpu.configure()
s = tilewise.open(sys.argv[1])
gpu = s.read_region((0, 0), (512, 512), device="cuda")
cpu = s.read_region((0, 0), (512, 512))
import cupy
diff = int(np.abs(cupy.asnumpy(cupy.from_dlpack(gpu)).astype(np.int64) - cpu.astype(np.int64)).max())
# The primary context's flags, through the CUDA runtime's own library (the driver's context is the same).
cudart = ctypes.CDLL("libcudart.so.13")
flags = ctypes.c_uint(0)
assert cudart.cudaSetDevice(0) == 0
status = cudart.cudaGetDeviceFlags(ctypes.byref(flags))
print(json.dumps({"diff": diff, "status": status, "schedule": flags.value & 0x07}))
"""


@pytest.mark.parametrize("blocking", [True, False])
def test_blocking_sync_setting_sets_the_primary_contexts_scheduling(blocking):
    """TILEWISE_GPU_BLOCKING_SYNC=1: the device's primary context schedules host waits as blocking syncs
    (cudaDeviceScheduleBlockingSync, 0x04) and device reads give the CPU's pixels; 0 leaves CUDA's scheduling
    alone (not blocking sync)."""
    path = DATA / "tifffile_jpeg.tif"
    if not path.exists():
        pytest.skip(f"{path} is missing (scripts/gpu/prepare.sh makes .gpu/data on the developer machine)")
    got = _child(_BLOCKING_SYNC_CHILD, path, TILEWISE_GPU_BLOCKING_SYNC="1" if blocking else "0")
    assert got["status"] == 0
    assert got["diff"] <= JPEG_TOLERANCE
    assert (got["schedule"] == 0x04) == blocking, got
