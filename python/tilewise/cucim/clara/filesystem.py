"""``cucim.clara.filesystem``."""

from .._filesystem import (CuFileDriver, FileHandleType, close, discard_page_cache, is_gds_available, open, pread,
                           pwrite)

__all__ = ["CuFileDriver", "FileHandleType", "close", "discard_page_cache", "is_gds_available", "open", "pread",
           "pwrite"]
