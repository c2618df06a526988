"""cuCIM's cache API over tilewise's process-wide tile cache: ``CuImage.cache(...)``, ``ImageCache``,
``CacheType``, ``preferred_memory_capacity``, ``CuImage.device_cache()``."""

from __future__ import annotations

import enum
from typing import Optional, Sequence

from .. import _core

_MIB = 1 << 20
# Fields of cuCIM's cache configuration that tilewise's cache has no use for, reported with cuCIM's defaults.
_CUCIM_CACHE_DEFAULTS = {"mutex_pool_capacity": 100003, "list_padding": 10000, "extra_shared_memory_size": 100}


class CacheType(enum.Enum):
    NoCache = "nocache"
    PerProcess = "per_process"
    SharedMemory = "shared_memory"

    def __repr__(self) -> str:
        return f"CacheType.{self.name}"

    __str__ = __repr__


_cache_state = {"type": CacheType.PerProcess, "record_stat": True}


def _configure_cache(type=None, memory_capacity: int = 1024, capacity: Optional[int] = None,
                     record_stat: bool = False, **_ignored) -> None:
    kind = CacheType(type) if type is not None else _cache_state["type"]
    _cache_state["type"] = kind
    _cache_state["record_stat"] = bool(record_stat)
    _core.set_cache_capacity(0 if kind is CacheType.NoCache else int(memory_capacity) * _MIB)
    _core.reset_cache_stats()


class ImageCache:
    """A view of tilewise's process-wide tile cache with cuCIM's ``ImageCache`` attributes."""

    @property
    def type(self) -> CacheType:
        return CacheType.NoCache if _core.cache_capacity() == 0 else _cache_state["type"]

    @property
    def memory_capacity(self) -> int:
        return _core.cache_capacity()

    @property
    def capacity(self) -> int:  # tiles of 256 x 256 RGB that fit, as cuCIM counts
        return self.memory_capacity // (256 * 256 * 3)

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
        return {"type": self.type.value, "memory_capacity": self.memory_capacity // _MIB, "capacity": self.capacity,
                **_CUCIM_CACHE_DEFAULTS, "record_stat": _cache_state["record_stat"]}

    def record(self, value: Optional[bool] = None) -> bool:
        if value is not None:
            _cache_state["record_stat"] = bool(value)
            if value:
                _core.reset_cache_stats()
        return _cache_state["record_stat"]

    def reserve(self, memory_capacity: int, capacity: Optional[int] = None) -> None:
        if memory_capacity * _MIB > _core.cache_capacity():
            _core.set_cache_capacity(int(memory_capacity) * _MIB)


def cache(type=None, **kwargs) -> ImageCache:  # noqa: A001 - cuCIM's argument name
    """``CuImage.cache(...)``: the tile cache; with arguments, reconfigures it."""
    if type is not None or kwargs:
        _configure_cache(type, **kwargs)
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

