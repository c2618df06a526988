"""cuCIM's cache API over tilewise's process-wide tile cache: ``CuImage.cache(...)``, ``ImageCache``,
``CacheType``, ``preferred_memory_capacity``, ``CuImage.device_cache()``."""

from __future__ import annotations

import enum
import os
from typing import Optional, Sequence

from .. import _core
from .._shared_cache import set_cache_capacity, set_shared_cache

_MIB = 1 << 20
# Fields of cuCIM's cache configuration that tilewise's cache has no use for, reported with cuCIM's defaults.
_CUCIM_CACHE_DEFAULTS = {"mutex_pool_capacity": 100003, "list_padding": 10000, "extra_shared_memory_size": 100}


class CacheType(enum.Enum):
    """cuCIM's cache kinds; ``int()`` gives cuCIM's numbers."""

    NoCache = 0
    PerProcess = 1
    SharedMemory = 2

    def __int__(self) -> int:
        return self.value

    __index__ = __int__

    def __repr__(self) -> str:
        return f"<CacheType.{self.name}: {self.value}>"

    def __str__(self) -> str:
        return f"CacheType.{self.name}"


_NAMES = {CacheType.NoCache: "nocache", CacheType.PerProcess: "per_process", CacheType.SharedMemory: "shared_memory"}
_BY_NAME = {**{name: kind for kind, name in _NAMES.items()}, "no_cache": CacheType.NoCache}
_TILE_BYTES = 256 * 256 * 3  # cuCIM counts a cache's capacity in 256 x 256 RGB tiles

# The configuration as cuCIM reports it: the last requested one (its memory_capacity in MiB, even for "nocache").
_cache_state = {"type": CacheType.NoCache, "memory_capacity": 1024, "capacity": 1024 * _MIB // _TILE_BYTES,
                "record_stat": False, "applied": False}


def _kind(type) -> CacheType:  # noqa: A002 - cuCIM's argument name
    if isinstance(type, CacheType):
        return type
    if isinstance(type, str) and type in _BY_NAME:
        return _BY_NAME[type]
    if isinstance(type, int) and type in (0, 1, 2):
        return CacheType(type)
    raise ValueError(f"The first argument should be one of {sorted(_BY_NAME)}.")


def _configure_cache(type=None, memory_capacity: int = 1024, capacity: Optional[int] = None,
                     record_stat: bool = False, **_ignored) -> None:
    kind = _kind(type) if type is not None else _cache_state["type"]
    memory_capacity = int(memory_capacity)
    same_shared = (kind is CacheType.SharedMemory and _core.shared_cache_path() != ""
                   and _cache_state["type"] is CacheType.SharedMemory and _cache_state["memory_capacity"] == memory_capacity)
    _cache_state.update(type=kind, memory_capacity=memory_capacity, record_stat=bool(record_stat), applied=True,
                        capacity=int(capacity) if capacity is not None else memory_capacity * _MIB // _TILE_BYTES)
    if kind is CacheType.SharedMemory:
        # A worker configuring the cache its parent shared keeps sharing it rather than making its own.
        if not same_shared:
            set_shared_cache(memory_capacity * _MIB)
    else:
        set_cache_capacity(0 if kind is CacheType.NoCache else memory_capacity * _MIB)
    _core.reset_cache_stats()


def apply_default() -> None:
    """cuCIM starts without a cache: the first use of tilewise.cucim turns tilewise's tile cache off, as a program
    written for cuCIM expects, unless it was configured through ``TILEWISE_CACHE_BYTES`` or ``cache(...)``."""
    if _cache_state["applied"]:
        return
    _cache_state["applied"] = True
    if _core.shared_cache_path():  # attached through TILEWISE_SHARED_CACHE
        _cache_state.update(type=CacheType.SharedMemory, memory_capacity=_core.cache_capacity() // _MIB,
                            capacity=_core.cache_capacity() // _TILE_BYTES)
        return
    if os.environ.get("TILEWISE_CACHE_BYTES"):
        _cache_state.update(type=CacheType.PerProcess, memory_capacity=_core.cache_capacity() // _MIB,
                            capacity=_core.cache_capacity() // _TILE_BYTES)
        return
    set_cache_capacity(0)


class ImageCache:
    """A view of tilewise's process-wide tile cache with cuCIM's ``ImageCache`` attributes."""

    @property
    def type(self) -> CacheType:
        if _core.cache_capacity() == 0:
            return CacheType.NoCache
        return CacheType.SharedMemory if _core.shared_cache_path() else CacheType.PerProcess

    @property
    def _on(self) -> bool:
        return self.type is not CacheType.NoCache

    @property
    def memory_capacity(self) -> int:  # a shared cache's counts its segment's headers and indexes, as cuCIM's does
        return _core.shared_cache_segment_bytes() or _core.cache_capacity()

    @property
    def capacity(self) -> int:  # tiles of 256 x 256 RGB that fit, as cuCIM counts
        return _cache_state["capacity"] if self._on else 0

    @property
    def memory_size(self) -> int:
        return _core.cache_stats()["bytes"]

    @property
    def size(self) -> int:
        return _core.cache_stats()["entries"]

    @property
    def hit_count(self) -> int:
        return _core.cache_stats()["hits"]

    @property
    def miss_count(self) -> int:
        return _core.cache_stats()["misses"]

    @property
    def free_memory(self) -> int:
        return max(0, self.memory_capacity - self.memory_size)

    @property
    def config(self) -> dict:
        return {"type": _NAMES[self.type], "memory_capacity": _cache_state["memory_capacity"],
                "capacity": _cache_state["capacity"], **_CUCIM_CACHE_DEFAULTS, "record_stat": _cache_state["record_stat"]}

    def record(self, value: Optional[bool] = None) -> bool:
        if value is not None:
            _cache_state["record_stat"] = bool(value)
            if value:
                _core.reset_cache_stats()
        return _cache_state["record_stat"]

    def reserve(self, memory_capacity: int, capacity: Optional[int] = None) -> None:
        """Grows the cache (cuCIM never shrinks it here); a cache that is off stays off."""
        if not self._on or self.type is CacheType.SharedMemory:  # a shared segment keeps its size
            return
        if int(memory_capacity) * _MIB > _core.cache_capacity():
            set_cache_capacity(int(memory_capacity) * _MIB)
            _cache_state["memory_capacity"] = int(memory_capacity)
        wanted = int(capacity) if capacity is not None else int(memory_capacity) * _MIB // _TILE_BYTES
        _cache_state["capacity"] = max(_cache_state["capacity"], wanted)


def cache(type=None, **kwargs) -> ImageCache:  # noqa: A001 - cuCIM's argument name
    """``CuImage.cache(...)``: the tile cache; with arguments, reconfigures it."""
    if type is not None or kwargs:
        _configure_cache(type, **kwargs)
    else:
        apply_default()
    return ImageCache()


def preferred_memory_capacity(img: Optional["CuImage"] = None, image_size: Optional[Sequence[int]] = None,
                              tile_size: Optional[Sequence[int]] = None, patch_size: Optional[Sequence[int]] = None,
                              bytes_per_pixel: int = 3) -> int:
    """A cache size in MiB that holds every tile a row of patches can touch (cuCIM's formula)."""
    if img is not None:
        image_size = img.size("XY")
        tile_size = img.resolutions["level_tile_sizes"][0]
    tile_size = tile_size or (256, 256)
    patch_size = patch_size or (256, 256)
    if image_size is None or len(image_size) != 2 or len(tile_size) != 2 or len(patch_size) != 2:
        raise ValueError("Please specify image_size, tile_size and patch_size as (width, height)")
    across = (image_size[0] + tile_size[0] - 1) // tile_size[0]
    down = min(image_size[1] + tile_size[1] - 1, patch_size[1] + tile_size[1] - 1) // tile_size[1] + 1
    needed = across * tile_size[0] * tile_size[1] * down * bytes_per_pixel
    return needed // _MIB + (1 if needed % _MIB else 0)

