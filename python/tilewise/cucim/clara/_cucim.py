"""``cucim.clara._cucim``: the names of cuCIM's extension module and its submodules (``cache``, ``filesystem``,
``io``, ``profiler``), which some programs import directly."""

import sys
import types

from .. import CuImage, CuImageIterator, DLDataType, DLDataTypeCode, Profiler
from . import cache, filesystem, io

profiler = types.ModuleType(__name__ + ".profiler", "cuCIM's profiler module: Profiler.")
profiler.Profiler = Profiler
for _module in (cache, filesystem, io, profiler):
    sys.modules[f"{__name__}.{_module.__name__.rsplit('.', 1)[1]}"] = _module

__all__ = ["CuImage", "CuImageIterator", "DLDataType", "DLDataTypeCode", "cache", "filesystem", "io", "profiler"]
