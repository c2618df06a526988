"""The decoded-tile cache in shared memory: processes forked after it is shared, spawned processes that attach
through TILEWISE_SHARED_CACHE and unrelated processes sharing a named segment read each other's tiles; workers
killed mid-read leave it usable; cuCIM's "shared_memory" cache test passes through tilewise.cucim."""

from __future__ import annotations

import gc
import hashlib
import json
import multiprocessing
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import slidegen
import tilewise

# Unaligned patches, so every tile they touch is cut (cached tiles are those cut by a region's edge).
PATCHES = [(37 + 211 * i, 53 + 157 * i) for i in range(6)]
SIZE = (300, 300)


@pytest.fixture(scope="module")
def slide_path(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("shared-cache") / "slide.tif"
    slidegen.write_vips_pyramid(path, slidegen.tissue_image(1600, 1200, seed=41))
    return str(path)


@pytest.fixture(autouse=True)
def per_process_cache_after():
    capacity = tilewise.cache_capacity()
    yield
    tilewise.set_cache_capacity(capacity)
    os.environ.pop("TILEWISE_SHARED_CACHE", None)


def _digest(arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def _read_patches(path: str) -> tuple[int, int, str]:
    """In a worker: this process's hits and misses over the patches, and their pixels' digest."""
    slide = tilewise.open(path)
    tilewise.reset_cache_stats()
    pixels = [slide.read_region(p, SIZE) for p in PATCHES]
    stats = tilewise.cache_stats()
    return stats["hits"], stats["misses"], _digest(pixels)


def _three_forked_workers(path: str) -> list[tuple[int, int, str]]:
    """Three DataLoader-like workers, one after another, each a process forked from this one."""
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(processes=1, maxtasksperchild=1) as pool:
        return [pool.apply(_read_patches, (path,)) for _ in range(3)]


def test_forked_workers_share_decoded_tiles(slide_path):
    truth = _digest([tilewise.open(slide_path).read_region(p, SIZE, use_cache=False) for p in PATCHES])
    tilewise.set_cache_capacity(64 << 20)
    per_process = _three_forked_workers(slide_path)
    tilewise.set_shared_cache(64 << 20)
    shared = _three_forked_workers(slide_path)
    assert all(digest == truth for _, _, digest in per_process + shared)
    lookups = per_process[0][0] + per_process[0][1]
    # Per process, every worker starts empty: the third misses as often as the first.
    assert per_process[2][1] == per_process[0][1] > 0
    # Shared: the first worker's misses admit the tiles, the second decodes and stores them, the third hits.
    assert shared[0][1] == per_process[0][1]
    assert shared[2][:2] == (lookups, 0)
    stats = tilewise.cache_stats()
    assert stats["entries"] > 0 and stats["bytes"] > 0 and stats["capacity"] >= 64 << 20


def test_a_spawned_process_attaches_through_the_environment(slide_path):
    path = tilewise.set_shared_cache(32 << 20)
    assert path.startswith("/proc/") and os.environ["TILEWISE_SHARED_CACHE"] == path
    assert tilewise.shared_cache_path() == path
    slide = tilewise.open(slide_path)
    for _ in range(2):  # the second read of each tile admits and stores it
        pixels = [slide.read_region(p, SIZE) for p in PATCHES]
    script = (
        "import json, sys, tilewise\n"
        f"s = tilewise.open({slide_path!r})\n"
        f"[s.read_region(p, {SIZE!r}) for p in {PATCHES!r}]\n"
        "print(json.dumps([tilewise.shared_cache_path(), tilewise.cache_stats()]))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    attached, stats = json.loads(done.stdout.splitlines()[-1])
    assert attached == path
    assert stats["misses"] == 0 and stats["hits"] > 0
    assert _digest(pixels) == _digest([slide.read_region(p, SIZE, use_cache=False) for p in PATCHES])
    tilewise.set_cache_capacity(16 << 20)  # per-process again: children no longer attach
    assert tilewise.shared_cache_path() is None and "TILEWISE_SHARED_CACHE" not in os.environ


def test_unrelated_processes_share_a_named_cache_which_the_last_one_removes(slide_path):
    name = f"test-{os.getpid()}-{random.randrange(1 << 30)}"
    env = dict(os.environ, TILEWISE_SHARED_CACHE=name, TILEWISE_CACHE_BYTES=str(16 << 20))
    read = (f"import json, sys, tilewise\ns = tilewise.open({slide_path!r})\n"
            f"for _ in range(int(sys.argv[1])): [s.read_region(p, {SIZE!r}) for p in {PATCHES!r}]\n"
            "print(json.dumps([tilewise.shared_cache_path(), tilewise.cache_stats()]), flush=True)\n"
            "sys.stdin.readline()\n")
    first = subprocess.Popen([sys.executable, "-c", read, "2"], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True)
    try:
        first_path, _ = json.loads(first.stdout.readline())
        assert first_path == name and Path(f"/dev/shm/tilewise-cache-{name}").exists()
        second = subprocess.run([sys.executable, "-c", read, "1"], env=env, input="\n", capture_output=True, text=True,
                                check=True)
        _, stats = json.loads(second.stdout.splitlines()[-1])
        assert stats["misses"] == 0 and stats["hits"] > 0 and stats["capacity"] >= 16 << 20
    finally:
        first.communicate("\n", timeout=60)
    assert first.returncode == 0
    assert not Path(f"/dev/shm/tilewise-cache-{name}").exists()


def _read_forever(path: str) -> None:
    slide = tilewise.open(path)
    rng = random.Random(os.getpid())
    while True:
        slide.read_region((rng.randrange(0, 1200), rng.randrange(0, 800)), SIZE)


def test_workers_killed_mid_read_leave_the_cache_usable(slide_path):
    tilewise.set_shared_cache(2 << 20)  # small: workers evict and overwrite each other's tiles
    slide = tilewise.open(slide_path)
    gc.collect()  # descriptors earlier tests' garbage still holds are not this test's to count
    fds = len(os.listdir("/proc/self/fd"))
    shm = set(os.listdir("/dev/shm"))
    ctx = multiprocessing.get_context("fork")
    rng = random.Random(7)
    for _ in range(24):
        workers = [ctx.Process(target=_read_forever, args=(slide_path,)) for _ in range(2)]
        for w in workers:
            w.start()
        time.sleep(rng.uniform(0.02, 0.12))
        for w in workers:
            os.kill(w.pid, signal.SIGKILL)
            w.join()
            w.close()
    for _ in range(2):
        got = [slide.read_region(p, SIZE) for p in PATCHES]
    assert _digest(got) == _digest([slide.read_region(p, SIZE, use_cache=False) for p in PATCHES])
    assert tilewise.cache_stats()["hits"] > 0
    assert len(os.listdir("/proc/self/fd")) <= fds and set(os.listdir("/dev/shm")) == shm  # nothing left open


_CUCIM_SHARED_MEMORY_TEST = """
import json
from MODULE import CuImage
cache = CuImage.cache("shared_memory", memory_capacity=128)
assert int(cache.type) == 2
assert cache.memory_size == 0
assert cache.memory_capacity > 2**20 * 128
assert cache.free_memory > 2**20 * 128
assert cache.size == 0
assert cache.capacity > 0
assert cache.hit_count == 0
assert cache.miss_count == 0
config = cache.config
assert config["type"] == "shared_memory"
assert config["memory_capacity"] == 128
assert not config["record_stat"]
print(json.dumps([int(cache.type), str(cache.type), cache.size, config["type"], config["memory_capacity"]]))
"""


def _cucim_shared_memory_test(module: str) -> list:
    """cuCIM's own test_get_shared_memory_cache in a fresh process, through `module`; the numbers it saw."""
    done = subprocess.run([sys.executable, "-c", _CUCIM_SHARED_MEMORY_TEST.replace("MODULE", module)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_cucim_shared_memory_cache_test_passes_through_tilewise():
    assert _cucim_shared_memory_test("tilewise.cucim") == [2, "CacheType.SharedMemory", 0, "shared_memory", 128]


def test_cucim_shared_memory_cache_reports_what_cucim_reports():
    pytest.importorskip("cucim", reason="cuCIM (requirements-oracles.txt) is not installed")
    assert _cucim_shared_memory_test("tilewise.cucim") == _cucim_shared_memory_test("cucim")
