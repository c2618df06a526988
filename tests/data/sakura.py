"""A writer of Sakura SVSlide files (an SQLite database: a blob table named by DataManagerSQLiteConfigXPO whose
tile blobs are named "T;x|y;downsample;colour;plane" (x, y in level-0 pixels), slide and scan metadata tables;
also the older `tile` table), laid out as OpenSlide 4.0.1 reads them. Each tile is three greyscale JPEGs, one per colour channel (Pillow); the levels
are the image downsampled by powers of two (a box filter)."""

from __future__ import annotations

import io
import sqlite3
import struct
from pathlib import Path
from typing import Iterable, Optional, Tuple

import numpy as np
from PIL import Image


def _down(image: np.ndarray, f: int) -> np.ndarray:
    if f == 1:
        return image
    h, w = image.shape[:2]
    return image[: h // f * f, : w // f * f].reshape(h // f, f, w // f, f, 3).mean(axis=(1, 3)).round().astype(np.uint8)


def _jpeg(a: np.ndarray, mode: str = "L") -> bytes:
    buf = io.BytesIO()
    Image.fromarray(a, mode).save(buf, "JPEG", quality=90)
    return buf.getvalue()


def write_svslide(path, image: np.ndarray, *, tile: int = 128, levels: int = 3, missing: Iterable[Tuple[int, int, int]] = (),
                  magic: str = "SVGigaPixelImage", resolution_mm: float = 0.000250, lens: float = 20.0,
                  associated: bool = True, table: str = "SVSlideBlobs", extra_sql: Optional[str] = None,
                  focal_planes: int = 1, missing_channel: Iterable[Tuple[int, int, int, int]] = ()) -> Path:
    """`missing`: (level, col, row) tiles left out; `missing_channel`: (level, col, row, colour) blobs left out.
    With several `focal_planes`, OpenSlide shows the middle one; the others hold the negative image."""
    path = Path(path)
    if path.exists():
        path.unlink()
    h, w = image.shape[:2]
    missing = set(missing)
    db = sqlite3.connect(path)
    c = db.cursor()
    c.execute("CREATE TABLE DataManagerSQLiteConfigXPO (OID INTEGER PRIMARY KEY, TableName TEXT)")
    c.execute("INSERT INTO DataManagerSQLiteConfigXPO (TableName) VALUES (?)", (table,))
    c.execute(f'CREATE TABLE "{table}" (id TEXT PRIMARY KEY, data BLOB)')
    c.execute(f'INSERT INTO "{table}" VALUES (?, ?)', ("++MagicBytes", magic))
    c.execute(f'INSERT INTO "{table}" VALUES (?, ?)', ("++VersionBytes", "1.2.3"))
    c.execute(f'INSERT INTO "{table}" VALUES (?, ?)',
              ("Header", struct.pack("<IIII", tile, w, h, 0) + struct.pack("<I", focal_planes) + bytes(12)))
    shown = focal_planes // 2 + focal_planes % 2 - 1
    missing_channel = set(missing_channel)
    c.execute("CREATE TABLE tile (OID INTEGER PRIMARY KEY, PYRAMIDLEVEL INTEGER, COLUMNINDEX INTEGER, "
              "ROWINDEX INTEGER, COLORINDEX INTEGER, TILEID TEXT)")
    for k in range(levels):
        ds = 1 << k
        level = _down(image, ds)
        lh, lw = level.shape[:2]
        for row in range(-(-lh // tile)):
            for col in range(-(-lw // tile)):
                if (k, col, row) in missing:
                    continue
                part = np.zeros((tile, tile, 3), np.uint8)
                src = level[row * tile:(row + 1) * tile, col * tile:(col + 1) * tile]
                part[:src.shape[0], :src.shape[1]] = src
                for plane in range(focal_planes):
                    shot = part if plane == shown else 255 - part
                    for color in range(3):
                        if (k, col, row, color) in missing_channel:
                            continue
                        tid = f"T;{col * tile * ds}|{row * tile * ds};{ds};{color};{plane}"
                        c.execute(f'INSERT INTO "{table}" VALUES (?, ?)', (tid, _jpeg(np.ascontiguousarray(shot[..., color]))))
                        c.execute("INSERT INTO tile (PYRAMIDLEVEL, COLUMNINDEX, ROWINDEX, COLORINDEX, TILEID) "
                                  "VALUES (?, ?, ?, ?, ?)", (ds, col * tile * ds, row * tile * ds, color, tid))
    c.execute("CREATE TABLE SVScannedImageDataXPO (OID INTEGER PRIMARY KEY, Image BLOB)")
    label = np.zeros((120, 300, 3), np.uint8)
    label[:, :, 1] = 200
    macro = _down(image, 8)
    c.execute("INSERT INTO SVScannedImageDataXPO VALUES (1, ?)", (_jpeg(label, "RGB"),))
    c.execute("INSERT INTO SVScannedImageDataXPO VALUES (2, ?)", (_jpeg(macro, "RGB"),))
    c.execute("CREATE TABLE SVSlideDataXPO (OID INTEGER PRIMARY KEY, SlideId TEXT, Date TEXT, Description TEXT, "
              "Creator TEXT, DiagnosisCode TEXT, Keywords TEXT, m_labelScan INTEGER, m_overviewScan INTEGER)")
    c.execute("INSERT INTO SVSlideDataXPO VALUES (1, 'SL-0007', '2013-05-06', 'a test slide', 'tilewise', '', 'kw', ?, ?)",
              (1 if associated else None, 2 if associated else None))
    c.execute("CREATE TABLE SVHRScanDataXPO (OID INTEGER PRIMARY KEY, ParentSlide INTEGER, ScanId TEXT, Date TEXT, "
              "Name TEXT, Description TEXT, ResolutionMmPerPix REAL, NominalLensMagnification REAL, "
              "FocussingMethod TEXT, ThumbnailImage BLOB)")
    c.execute("INSERT INTO SVHRScanDataXPO VALUES (1, 1, 'SC-1', '2013-05-06', 'scan', '', ?, ?, 'auto', ?)",
              (resolution_mm, lens, _jpeg(_down(image, 16), "RGB") if associated else None))
    if extra_sql:
        c.executescript(extra_sql)
    db.commit()
    db.close()
    return path
