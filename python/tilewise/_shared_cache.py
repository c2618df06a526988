"""The decoded-tile cache in shared memory, read and filled by several processes."""

from __future__ import annotations

import os
from typing import Optional

from . import _core


def set_shared_cache(bytes: int, name: Optional[str] = None) -> str:  # noqa: A002 - the C++ API's name
    """Moves the process-wide tile cache into shared memory with ``bytes`` of tile space and returns where other
    processes attach to it.

    DataLoader workers forked afterwards share it as it is; processes started otherwise (``spawn``) attach
    through ``TILEWISE_SHARED_CACHE``, which this sets. With ``name``, unrelated processes on the host (DDP
    ranks) share ``/dev/shm/tilewise-cache-<name>``: the first to call creates it, the others open it; setting
    ``TILEWISE_SHARED_CACHE=<name>`` before they start does the same. ``cache_stats()`` then counts this
    process's hits and misses and the shared store's entries, bytes and evictions.
    ``tilewise.set_cache_capacity`` returns to a per-process cache.
    """
    _core.set_shared_cache(int(bytes), name or "")
    path = _core.shared_cache_path()
    os.environ["TILEWISE_SHARED_CACHE"] = path
    return path


def shared_cache_path() -> Optional[str]:
    """Where other processes attach to the shared tile cache; None when the cache is per-process."""
    return _core.shared_cache_path() or None


def set_cache_capacity(bytes: int) -> None:  # noqa: A002 - the C++ API's name
    """Sets the byte budget of the process-wide decoded-tile cache, a per-process one (0 disables it); a shared
    cache is left, and processes started afterwards no longer attach to it."""
    if _core.shared_cache_path():
        os.environ.pop("TILEWISE_SHARED_CACHE", None)
    _core.set_cache_capacity(int(bytes))
