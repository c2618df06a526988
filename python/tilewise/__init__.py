"""tilewise: fast, safe whole-slide image reading (and writing: tilewise.convert, tilewise.write_array).

    import tilewise
    slide = tilewise.open("slide.svs")
    patch = slide.read_region((x, y), (256, 256), level=0)   # (256, 256, 3) uint8
"""

from ._core import (
    __version__,
    cache_capacity,
    cache_stats,
    clear_cache,
    max_region_bytes,
    mcu_index_stats,
    reset_cache_stats,
    set_max_region_bytes,
    set_mcu_index_capacity,
    set_worker_threads,
    worker_threads,
)
from .errors import *  # noqa: F401,F403
from .errors import __all__ as _error_names
from ._shared_cache import set_cache_capacity, set_shared_cache, shared_cache_path
from ._write import convert, stow, write_array
from .slide import Channel, Level, RegionBatches, Scene, Slide, open

__all__ = [
    "open",
    "convert",
    "stow",
    "write_array",
    "Slide",
    "Level",
    "Channel",
    "Scene",
    "RegionBatches",
    "set_cache_capacity",
    "cache_capacity",
    "set_shared_cache",
    "shared_cache_path",
    "cache_stats",
    "clear_cache",
    "reset_cache_stats",
    "set_worker_threads",
    "worker_threads",
    "set_max_region_bytes",
    "max_region_bytes",
    "set_mcu_index_capacity",
    "mcu_index_stats",
    "__version__",
    *_error_names,
]
