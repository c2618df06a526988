"""Slides as dask arrays: ``tilewise.dask.level(slide, level, chunks=...)``.

    import tilewise, tilewise.dask
    arr = tilewise.dask.level(tilewise.open("slide.svs"), level=1)     # dask.array (h, w, 3) uint8
    arr.mean(axis=(0, 1)).compute()                                   # reads every tile once, in parallel

Each chunk is one region read in the level's own pixel frame. Default chunks are tile-aligned and about
1024 x 1024 pixels: each tile is decoded once, and a chunk holds enough work that dask's per-task cost does
not show (one tile per chunk scaled 0.80 x 2 on 2 cores, ~1024^2 chunks 0.94: bench/bench_dask.py). The
graph holds the slide, which pickles by path, so any dask scheduler - threads,
processes, a dask.distributed cluster - reads the chunks where its tasks run. Requires ``dask[array]``
(``pip install tilewise[dask]``).
"""

from __future__ import annotations

from typing import Optional, Sequence, Tuple, Union

import numpy as np

from .slide import Slide
from ._chunks import chunk_shape

__all__ = ["level"]


class _LevelArray:
    """The array-like that dask slices: shape (h, w, 3) uint8; __getitem__ reads the region of the slices."""

    def __init__(self, slide: Slide, level: int):
        self.slide, self.level = slide, level
        w, h = slide.levels[level].dimensions
        self.shape = (h, w, 3)
        self.dtype = np.dtype(np.uint8)
        self.ndim = 3

    def __getitem__(self, key) -> np.ndarray:
        if not isinstance(key, tuple):
            key = (key,)
        key = key + (slice(None),) * (3 - len(key))
        (y0, y1, ys), (x0, x1, xs) = (k.indices(n) for k, n in zip(key[:2], self.shape[:2]))
        if ys != 1 or xs != 1:
            return np.asarray(self[y0:y1, x0:x1])[::ys, ::xs][(slice(None), slice(None), key[2])]
        region = self.slide.read_level_region((x0, y0), (max(0, x1 - x0), max(0, y1 - y0)), level=self.level)
        return region[:, :, key[2]]


def level(slide: Slide, level: int = 0,
          chunks: Optional[Union[int, Tuple[int, int], Sequence]] = None):
    """Level `level` of `slide` as a dask array (h, w, 3) uint8. `chunks`: (rows, columns) per chunk (or any
    dask chunk spec); default: whole tiles, about 1024 x 1024 pixels."""
    import dask.array as da

    if not 0 <= level < slide.level_count:
        raise ValueError(f"level {level} does not exist (the slide has {slide.level_count} levels)")
    tw, th = slide.levels[level].tile_size
    if chunks is None:
        chunks = (*chunk_shape((tw, th)), 3)
    elif isinstance(chunks, int):
        chunks = (chunks, chunks, 3)
    elif len(chunks) == 2:
        chunks = (chunks[0], chunks[1], 3)
    return da.from_array(_LevelArray(slide, level), chunks=chunks, asarray=False, fancy=False,
                         name=f"tilewise-{slide.path}-level{level}-{chunks}")
