"""Slides on dask: ``tilewise.dask.level(slide, level, chunks=...)`` (a level as a dask array) and
``tilewise.dask.map_patches(paths, fn, ...)`` (a function over the patch grids of many slides, as a dask
bag, for cohort-scale runs on a dask.distributed cluster).

    import tilewise, tilewise.dask
    arr = tilewise.dask.level(tilewise.open("slide.svs"), level=1)     # dask.array (h, w, 3) uint8
    arr.mean(axis=(0, 1)).compute()                                   # reads every tile once, in parallel

An image that is not brightfield RGB (``Slide.is_rgb`` false: channels, focal planes, time points) is a
(t, c, z, y, x) array of its own sample type, each chunk every channel of one plane's region by default.

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

from . import _extras
from ._chunks import chunk_shape
from .slide import Slide

__all__ = ["level", "map_patches", "patch_grid", "process_patches"]


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
        region = self.slide.read_level_region((x0, y0), (max(0, x1 - x0), max(0, y1 - y0)), level=self.level, c="rgb")
        return region[:, :, key[2]]


class _PlanesArray:
    """The array-like of an image with planes: shape (t, c, z, h, w) of its sample type; __getitem__ reads
    the asked channels of each asked (t, z) plane's region."""

    def __init__(self, slide: Slide, level: int):
        self.slide, self.level = slide, level
        self.shape = slide.shape(level)
        self.dtype = slide.dtype
        self.ndim = 5

    def __getitem__(self, key) -> np.ndarray:
        if not isinstance(key, tuple):
            key = (key,)
        key = key + (slice(None),) * (5 - len(key))
        ranges = [range(*k.indices(n)) for k, n in zip(key, self.shape)]
        ts, cs, zs, ys, xs = ranges
        out = np.empty((len(ts), len(cs), len(zs), len(ys), len(xs)), self.dtype)
        if out.size == 0:
            return out
        y0, x0 = ys.start, xs.start
        for i, t in enumerate(ts):
            for j, z in enumerate(zs):
                region = self.slide.read_level_region((x0, y0), (xs[-1] - x0 + 1, ys[-1] - y0 + 1), level=self.level,
                                                      c=list(cs), z=z, t=t)
                out[i, :, j] = np.moveaxis(region[::ys.step, ::xs.step], -1, 0)
        return out


def level(slide: Slide, level: int = 0,
          chunks: Optional[Union[int, Tuple[int, int], Sequence]] = None):
    """Level `level` of `slide` as a dask array (h, w, 3) uint8, or (t, c, z, h, w) of its sample type for an
    image with planes. `chunks`: (rows, columns) per chunk (or any dask chunk spec); default: whole tiles,
    about 1024 x 1024 pixels (of every channel of one plane)."""
    da = _extras.require("dask.array", "dask", "tilewise.dask.level")

    if not 0 <= level < slide.level_count:
        raise ValueError(f"level {level} does not exist (the slide has {slide.level_count} levels)")
    tw, th = slide.levels[level].tile_size
    if not slide.is_rgb:
        channels = slide.shape()[1]
        if chunks is None:
            chunks = (1, channels, 1, *chunk_shape((tw, th)))
        elif isinstance(chunks, int):
            chunks = (1, channels, 1, chunks, chunks)
        elif len(chunks) == 2:
            chunks = (1, channels, 1, chunks[0], chunks[1])
        return da.from_array(_PlanesArray(slide, level), chunks=chunks, asarray=False, fancy=False,
                             name=f"tilewise-{slide.path}-planes{level}-{chunks}")
    if chunks is None:
        chunks = (*chunk_shape((tw, th)), 3)
    elif isinstance(chunks, int):
        chunks = (chunks, chunks, 3)
    elif len(chunks) == 2:
        chunks = (chunks[0], chunks[1], 3)
    return da.from_array(_LevelArray(slide, level), chunks=chunks, asarray=False, fancy=False,
                         name=f"tilewise-{slide.path}-level{level}-{chunks}")


# --- cohort runs ------------------------------------------------------------------------------------------

def patch_grid(slide: Slide, size: Tuple[int, int] = (256, 256), level: int = 0,
               stride: Optional[Tuple[int, int]] = None, min_tissue: Optional[float] = None) -> np.ndarray:
    """Level-0 (x, y) of every patch of `size` (level pixels) on a grid of `stride` (default: `size`) over
    `level`; with `min_tissue`, only patches whose tissue fraction in a thumbnail mask (pixels noticeably
    darker or more saturated than the background) is at least that. An (N, 2) int64 array."""
    w, h = slide.levels[level].dimensions
    sw, sh = stride or size
    ds = slide.levels[level].downsample
    xs, ys = np.arange(0, max(1, w - size[0] + 1), sw), np.arange(0, max(1, h - size[1] + 1), sh)
    grid = np.array([(x, y) for y in ys for x in xs], np.int64).reshape(-1, 2)
    if min_tissue is not None and len(grid):
        thumb_level = slide.level_count - 1
        tw, th = slide.levels[thumb_level].dimensions
        thumb = slide.read_level_region((0, 0), (tw, th), level=thumb_level, c="rgb").astype(np.int16)
        saturation = thumb.max(axis=2) - thumb.min(axis=2)
        tissue = (saturation > 20) | (thumb.mean(axis=2) < 200)
        scale = slide.levels[thumb_level].downsample / ds  # level pixels per thumbnail pixel
        keep = []
        for x, y in grid:
            x0, y0 = int(x / scale), int(y / scale)
            x1, y1 = max(x0 + 1, int((x + size[0]) / scale)), max(y0 + 1, int((y + size[1]) / scale))
            window = tissue[y0:y1, x0:x1]
            keep.append(window.size > 0 and window.mean() >= min_tissue)
        grid = grid[np.array(keep, bool)]
    # Level-0 locations that map back to these level pixels: reads map by truncation, so the smallest
    # level-0 x with trunc(x / ds) == level x is ceil(level x * ds) (rounding could land one pixel short).
    return np.ceil(grid * ds).astype(np.int64)


_open_slides: dict = {}


def _worker_slide(path: str) -> Slide:
    """The slide of `path`, opened once per worker process (tasks of one slide reuse it)."""
    slide = _open_slides.get(path)
    if slide is None:
        if len(_open_slides) >= 64:
            _open_slides.clear()
        slide = _open_slides[path] = Slide(path)
    return slide


def process_patches(path: str, locations: np.ndarray, fn, size: Tuple[int, int] = (256, 256), level: int = 0,
                    batch_size: int = 64) -> list:
    """``fn(patch)`` for the patches of one slide at level-0 `locations`, read through the batch loader, as
    ``{"path", "x", "y", "level", "result"}`` records. The unit of work of :func:`map_patches`, and what
    another scheduler runs per task: with Ray, ``ray.remote(process_patches).remote(path, chunk, fn)`` over
    the chunks of :func:`patch_grid` (the slide is opened once per worker process, as here)."""
    slide = _worker_slide(path)
    out = []
    for start in range(0, len(locations), batch_size):
        part = locations[start:start + batch_size]
        for batch in slide.read_regions(part, size, level=level, batch_size=len(part), num_workers=1):
            for (x, y), patch in zip(part, batch):
                out.append({"path": path, "x": int(x), "y": int(y), "level": level, "result": fn(patch)})
    return out


def map_patches(paths: Sequence[str], fn, size: Tuple[int, int] = (256, 256), level: int = 0,
                stride: Optional[Tuple[int, int]] = None, min_tissue: Optional[float] = None,
                patches_per_task: int = 256, batch_size: int = 64):
    """``fn(patch)`` for every patch of the grid of every slide in `paths` (see :func:`patch_grid`), as a
    ``dask.bag.Bag`` of ``{"path", "x", "y", "level", "result"}`` records (x, y: level-0). Each task reads
    `patches_per_task` patches of one slide where it runs, through the batch loader; a worker process opens
    each slide once. The grids are planned here, on the client (one thumbnail read per slide when
    `min_tissue` is set). Compute it with any dask scheduler; on a cluster, ``client.compute(bag)`` or
    ``bag.compute()`` after ``distributed.Client(...)``. `fn` must be picklable (a module-level function).
    ``.to_dataframe()`` turns the bag into a dask DataFrame (needs pandas)."""
    dask = _extras.require("dask", "dask", "tilewise.dask.map_patches")
    db = _extras.require("dask.bag", "dask", "tilewise.dask.map_patches")

    tasks = []
    for path in paths:
        slide = Slide(path)
        grid = patch_grid(slide, size, level, stride, min_tissue)
        for start in range(0, len(grid), patches_per_task):
            tasks.append(dask.delayed(process_patches, pure=True)(str(path), grid[start:start + patches_per_task],
                                                                  fn, tuple(size), level, batch_size))
    return db.from_delayed(tasks) if tasks else db.from_sequence([])

