"""tilewise.convert: a slide as a tiled pyramidal TIFF (the C++ core's tilewise::convert)."""

from __future__ import annotations

import os
from typing import Callable, Optional, Union

from . import _core
from .slide import Slide, open as _open


def convert(
    source: Union[str, os.PathLike, Slide],
    output: Union[str, os.PathLike],
    *,
    tile_size: int = 256,
    codec: str = "jpeg",
    quality: int = 90,
    subsample: bool = True,
    levels: int = 0,
    progress: Optional[Callable[[int, int], None]] = None,
) -> None:
    """Writes `source` (a path tilewise opens, or an open Slide: its scene) to `output`, a BigTIFF named
    *.tif or *.tiff: level 0 as the slide's RGB, each next level a 2 x 2 box halving of the one before down to
    one tile, tiles of `tile_size` coded as `codec` ("jpeg" at `quality`, chroma 4:2:0 or with
    `subsample=False` 4:4:4; "deflate"; "none"), mpp as the
    resolution tags and the ICC profile carried over. OpenSlide reads the result as generic-tiff.

    The file is written under a temporary name and renamed when complete: on any error (a damaged tile of
    the source names its file, level and tile) nothing is left at `output`. `levels`: at most this many
    (0: all). `progress(rows_done, rows_total)` is called after each band of level 0; an exception it
    raises stops the conversion and propagates."""
    if isinstance(source, Slide):
        _core.convert(source._slide, os.fspath(output), tile_size, codec, quality, subsample, levels, progress)
        return
    with _open(source) as slide:
        _core.convert(slide._slide, os.fspath(output), tile_size, codec, quality, subsample, levels, progress)
