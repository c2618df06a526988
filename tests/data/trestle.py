"""A writer of Trestle slides (a tiled TIFF from "MedScan" whose ImageDescription lists per-level tile
overlaps, plus the ".Full" macro JPEG beside it), laid out as OpenSlide 4.0.1 reads them.

Level i stores camera tiles of `tile` pixels that overlap their neighbours by overlaps[i] pixels: tile
(c, r) holds the ground truth from (c * (tile - ox), r * (tile - oy)) of the level's image (the world
downsampled by 2^i), tinted per tile so that the overlaps show which tile is drawn."""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence, Tuple

import numpy as np
import tifffile
from PIL import Image


def _down(image: np.ndarray, f: int) -> np.ndarray:
    if f == 1:
        return image
    h, w = image.shape[:2]
    return image[: h // f * f, : w // f * f].reshape(h // f, f, w // f, f, 3).mean(axis=(1, 3)).round().astype(np.uint8)


def write_trestle(path, world: np.ndarray, *, tile: int = 128, overlaps: Sequence[Tuple[int, int]] = ((16, 8), (8, 4), (0, 0)),
                  compression: str = "jpeg", tint: int = 3, background: str = "FFFFFF", macro: bool = True,
                  extra: Optional[str] = None, trim: int = 20) -> Path:
    """`trim` pixels are cut off each directory's right and bottom edge (its last tiles are partial)."""
    path = Path(path)
    desc = (f"Background Color={background};Objective Power=20;White Balance=F8F8F8;"
            f"OverlapsXY= {' '.join(f'{x} {y}' for x, y in overlaps)};Scan Date=2013-01-02")
    if extra:
        desc += ";" + extra
    with tifffile.TiffWriter(path) as tw:
        for i, (ox, oy) in enumerate(overlaps):
            level = _down(world, 1 << i)
            h, w = level.shape[:2]
            adv_x, adv_y = tile - ox, tile - oy
            cols = max(1, (w - ox) // adv_x)
            rows = max(1, (h - oy) // adv_y)
            stored = np.full((rows * tile, cols * tile, 3), 255, np.uint8)
            for r in range(rows):
                for c in range(cols):
                    part = level[r * adv_y:r * adv_y + tile, c * adv_x:c * adv_x + tile].astype(np.int16)
                    part = np.clip(part + ((c + 2 * r) % 5 - 2) * tint, 0, 255).astype(np.uint8)
                    stored[r * tile:r * tile + part.shape[0], c * tile:c * tile + part.shape[1]] = part
            stored = np.ascontiguousarray(stored[: stored.shape[0] - trim, : stored.shape[1] - trim])
            tw.write(stored, tile=(tile, tile), compression=compression, photometric="rgb", metadata=None,
                     description=desc if i == 0 else None, software="MedScan 1.0",
                     resolution=(0.25 * (1 << i), 0.25 * (1 << i)), resolutionunit="NONE")
    if macro:
        m = Image.fromarray(_down(world, 8))
        m.save(path.with_suffix(".Full"), "JPEG", quality=90)
    return path
