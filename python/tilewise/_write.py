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
    format: str = "",
    tile_size: int = 256,
    codec: str = "auto",
    quality: int = 90,
    subsample: bool = True,
    copy_tiles: bool = False,
    levels: int = 0,
    progress: Optional[Callable[[int, int], None]] = None,
) -> None:
    """Writes `source` (a path tilewise opens, or an open Slide: its scene) to `output`: level 0 as read, each
    next level a 2 x 2 box halving of the one before down to one tile, in tiles of `tile_size`.

    - ``*.tif`` / ``*.tiff`` (RGB slides): a generic pyramidal BigTIFF, which OpenSlide reads as generic-tiff.
    - ``*.ome.tif`` / ``*.ome.tiff``: an OME-TIFF, every channel, focal plane and time point at its own
      sample type, each plane's levels as SubIFDs, the channels' names, colours and wavelengths in the
      OME-XML; an RGB slide is one interleaved RGB plane.
    - ``format="dicom"`` (RGB slides with mpp): a new folder holding a DICOM WSI series, one VL Whole Slide
      Microscopy Image instance per level (TILED_FULL, JPEG baseline or uncompressed frames), which pydicom,
      wsidicom, OpenSlide and a PACS read.

    `format`: "tiff", "ome-tiff" or "dicom" ("": from the name). `codec`: "auto" (JPEG for RGB, deflate for
    channels), "jpeg" (8-bit RGB; at `quality`, chroma 4:2:0 or with ``subsample=False`` 4:4:4), "deflate"
    (not DICOM) or "none" (lossless). `copy_tiles`: JPEG tiles of level 0 that already are what the output
    would encode (baseline YCbCr, same size and chroma subsampling) are copied as stored, not decoded and
    encoded again (their pixels stay the source's); the levels below are made from the decoded level 0. mpp becomes the resolution tags (and
    the OME physical pixel size); an RGB slide's ICC profile is carried over. The file is written under a
    temporary name and renamed when complete: on any error (a damaged tile of the source names its file,
    level and tile) nothing is left at `output`. `levels`: at most this many (0: all).
    `progress(rows_done, rows_total)` is called after each band of level 0 (rows over every plane); an
    exception it raises stops the conversion and propagates."""
    if isinstance(source, Slide):
        _core.convert(source._slide, os.fspath(output), format, tile_size, codec, quality, subsample, copy_tiles, levels, progress)
        return
    with _open(source) as slide:
        _core.convert(slide._slide, os.fspath(output), format, tile_size, codec, quality, subsample, copy_tiles, levels, progress)
