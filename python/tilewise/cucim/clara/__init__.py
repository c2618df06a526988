"""``cucim.clara``: cuCIM's image I/O namespace (``from cucim.clara import CuImage``), with its ``cache``, ``io``
and ``filesystem`` modules; ``_cucim`` mirrors the names of cuCIM's extension module."""

from .. import CuImage, CuImageIterator, DLDataType, DLDataTypeCode
from . import _cucim, cache, filesystem, io

__all__ = ["CuImage", "CuImageIterator", "DLDataType", "DLDataTypeCode", "cache", "filesystem", "io"]
