"""``cucim.clara.cache``."""

from .._cache import CacheType, ImageCache, preferred_memory_capacity

__all__ = ["CacheType", "ImageCache", "preferred_memory_capacity"]
