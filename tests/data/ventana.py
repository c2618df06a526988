"""A writer of Ventana BIF slides (BigTIFF; iScan XML in IFD 0's XMP, EncodeInfo XML in level 0's XMP) and
Ventana TIFF (no EncodeInfo), laid out as OpenSlide 4.0.1 reads them, for testing against it.

Each area of interest is a grid of camera tiles of `tile` pixels taken from a ground-truth `world` image at
the area's position, neighbours overlapping by `overlap` pixels (so the tile advance is tile - overlap); the
level-0 directory stores the camera tiles side by side, unstitched, each area at its AoiOrigin in that
grid, and level k is that directory downsampled by 2^k (a box filter), as the scanner stores it. Each
area's tiles are tinted by a few levels of their own so that the overlaps show which tile is drawn.
Positions and the advance are multiples of 2^(levels-1), so every level lands on whole pixels."""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence, Tuple

import numpy as np
import tifffile


def _down(image: np.ndarray, f: int) -> np.ndarray:
    if f == 1:
        return image
    h, w = image.shape[:2]
    return image.reshape(h // f, f, w // f, f, 3).mean(axis=(1, 3)).round().astype(np.uint8)


def _serpentine(col: int, row_from_top: int, across: int, down: int) -> int:
    """The 1-based tile number of (col, row) in the serpentine from the bottom-left."""
    row = down - row_from_top - 1
    if row % 2:
        col = across - col - 1
    return row * across + col + 1


def write_bif(path, world: np.ndarray, areas: Sequence[Tuple[int, int, int, int]], *, tile: int = 128,
              overlap: Tuple[int, int] = (16, 8), levels: int = 3, compression: str = "zlib", bif: bool = True,
              root: str = "iScan", tint: int = 4, confidence: int = 90, macro_name: str = "Label_Image",
              extra_iscan: Optional[dict] = None) -> Path:
    """`areas`: (x, y, cols, rows) - each area's top-left in world pixels and its tile counts. Returns the path."""
    path = Path(path)
    ox, oy = overlap
    adv_x, adv_y = tile - ox, tile - oy
    # Areas side by side in the stored grid, each starting at a column that is a multiple of 2^(levels-1).
    step = 1 << (levels - 1)
    starts, col = [], 0
    for (_, _, cols, rows) in areas:
        starts.append(col)
        col += -(-cols // step) * step
    grid_cols = col
    grid_rows = -(-max(r for *_, r in areas) // step) * step
    stored = np.full((grid_rows * tile, grid_cols * tile, 3), 255, np.uint8)
    for i, ((x, y, cols, rows), c0) in enumerate(zip(areas, starts)):
        for r in range(rows):
            for c in range(cols):
                wx, wy = x + c * adv_x, y + r * adv_y
                shot = world[wy:wy + tile, wx:wx + tile].astype(np.int16) + ((i * 3 + c + 2 * r) % 5 - 2) * tint
                stored[r * tile:(r + 1) * tile, (c0 + c) * tile:(c0 + c + 1) * tile] = np.clip(shot, 0, 255)
    heights = [(rows - 1) * adv_y + tile for (_, _, _, rows) in areas]
    bottom = max(y + h for (_, y, _, _), h in zip(areas, heights))
    infos, origins = [], []
    for i, ((x, y, cols, rows), c0, h) in enumerate(zip(areas, starts, heights)):
        joints = []
        for r in range(rows):
            for c in range(cols):
                if c + 1 < cols:
                    joints.append(f'<TileJointInfo FlagJoined="1" Confidence="{confidence}" Direction="RIGHT" '
                                  f'Tile1="{_serpentine(c, r, cols, rows)}" Tile2="{_serpentine(c + 1, r, cols, rows)}" '
                                  f'OverlapX="{ox}" OverlapY="0"/>')
                if r > 0:  # tile1 below, tile2 above
                    joints.append(f'<TileJointInfo FlagJoined="1" Confidence="{confidence}" Direction="UP" '
                                  f'Tile1="{_serpentine(c, r, cols, rows)}" Tile2="{_serpentine(c, r - 1, cols, rows)}" '
                                  f'OverlapX="0" OverlapY="{oy}"/>')
        infos.append(f'<ImageInfo AOIScanned="1" AOIIndex="{i}" Width="{tile}" Height="{tile}" NumRows="{rows}" '
                     f'NumCols="{cols}" Pos-X="{x}" Pos-Y="{bottom - y - h}">{"".join(joints)}</ImageInfo>')
        origins.append(f'<AOI{i} OriginX="{c0 * tile}" OriginY="0"/>')
    # An area the scanner skipped: ignored.
    infos.append(f'<ImageInfo AOIScanned="0" Width="{tile}" Height="{tile}" NumRows="1" NumCols="1" Pos-X="0" Pos-Y="0"/>')
    origins.append(f'<AOI{len(areas)} OriginX="0" OriginY="0"/>')
    encode = (f'<?xml version="1.0" encoding="UTF-8"?><EncodeInfo Ver="2"><SlideInfo/><AoiOrigin>{"".join(origins)}'
              f'</AoiOrigin><SlideStitchInfo>{"".join(infos)}</SlideStitchInfo></EncodeInfo>')
    attrs = {"Magnification": "40", "ScanRes": "0.232500", "Z-layers": "1", "UnitNumber": "BI10N0123",
             "BuildVersion": "3.3.1.1", "SlideAnnotation": "", **(extra_iscan or {})}
    iscan = "<iScan " + " ".join(f'{k}="{v}"' for k, v in attrs.items()) + "/>"
    initial = f'<?xml version="1.0" encoding="UTF-8"?>' + (f"<Metadata>{iscan}</Metadata>" if root == "Metadata" else iscan)

    def xmp(text: str):
        data = text.encode()
        return [(700, 1, len(data), data, True)]

    macro = _down(world[: world.shape[0] // 8 * 8, : world.shape[1] // 8 * 8], 8)
    with tifffile.TiffWriter(path, bigtiff=True) as tw:
        tw.write(macro, description=macro_name, extratags=xmp(initial), photometric="rgb", metadata=None,
                 compression=compression)
        tw.write(_down(macro, 2), description="Thumbnail", photometric="rgb", metadata=None, compression=compression)
        for k in range(levels):
            mag = 40 >> k
            tw.write(_down(stored, 1 << k), tile=(tile, tile), compression=compression, photometric="rgb", metadata=None,
                     description=f"level={k} mag={mag} quality=90", extratags=xmp(encode) if (k == 0 and bif) else None,
                     resolution=(1e4 / (0.2325 * (1 << k)),) * 2, resolutionunit="CENTIMETER")
    return path
