"""Chunk shapes shared by tilewise.zarr and tilewise.dask (no zarr or dask import here)."""

from __future__ import annotations

from typing import Tuple


def chunk_shape(tile_size: Tuple[int, int], target: int = 1024) -> Tuple[int, int]:
    """(rows, columns) of a chunk of whole tiles, about `target` pixels on each side (tilewise.dask's default
    too)."""
    tw, th = tile_size
    return th * max(1, round(target / th)), tw * max(1, round(target / tw))
