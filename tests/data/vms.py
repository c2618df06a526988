"""Writers for Hamamatsu VMS and VMU file sets, for testing against OpenSlide 4.0.1. VMS: an INI-style index
naming a grid of JPEG image files (level 0, each with restart markers), a map JPEG (a smaller level, also
with restart markers, as OpenSlide requires) and a macro JPEG; Pillow (libjpeg-turbo) encodes the JPEGs.
VMU: the index, an NGR image (uncompressed 12-bit RGB in columns) and an NGR map."""

from __future__ import annotations

from pathlib import Path
from typing import Dict, Optional

import numpy as np
from PIL import Image

from ndpi import encode_jpeg


def write_vms(folder, image: np.ndarray, *, cols: int = 2, rows: int = 2, restart_interval: int = 8,
              subsampling: str = "4:4:4", map_scale: int = 4, comment: Optional[str] = "tilewise test",
              macro: bool = True, extra: Optional[Dict[str, str]] = None, name: str = "slide") -> Path:
    """Splits `image` into cols x rows image files (sizes must divide into restart-interval units) and
    writes the set into `folder`; returns the .vms path."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    h, w = image.shape[:2]
    tw, th = w // cols, h // rows
    keys = {"NoLayers": "1", "NoJpegColumns": str(cols), "NoJpegRows": str(rows), "SourceLens": "20",
            "PhysicalWidth": str(int(w * 460)), "PhysicalHeight": str(int(h * 460))}
    for r in range(rows):
        for c in range(cols):
            piece = np.ascontiguousarray(image[r * th:(r + 1) * th, c * tw:(c + 1) * tw])
            fname = f"{name}_{c}_{r}.jpg"
            jpeg = encode_jpeg(piece, restart_interval=restart_interval, subsampling=subsampling)
            if comment is not None and (r, c) == (0, 0):
                jpeg = jpeg[:2] + b"\xff\xfe" + (len(comment) + 3).to_bytes(2, "big") + comment.encode() + b"\0" + jpeg[2:]
            (folder / fname).write_bytes(jpeg)
            keys["ImageFile" if (r, c) == (0, 0) else f"ImageFile({c},{r})"] = fname
    small = np.asarray(Image.fromarray(image).resize((w // map_scale, h // map_scale), Image.BILINEAR))
    (folder / f"{name}_map.jpg").write_bytes(encode_jpeg(small, restart_interval=restart_interval // 2 or 1,
                                                         subsampling=subsampling))
    keys["MapFile"] = f"{name}_map.jpg"
    if macro:
        mac = np.zeros((120, 360, 3), np.uint8)
        mac[:, :, 2] = 180
        mac[30:90, 60:300] = (200, 90, 40)
        (folder / f"{name}_macro.jpg").write_bytes(encode_jpeg(mac))
        keys["MacroImage"] = f"{name}_macro.jpg"
    keys.update(extra or {})
    index = folder / f"{name}.vms"
    index.write_text("[Virtual Microscope Specimen]\r\n" + "".join(f"{k}={v}\r\n" for k, v in keys.items()))
    return index


def write_ngr(path, image12: np.ndarray, column_width: int) -> None:
    """An NGR file: "GN", width, height and column width (32-bit little-endian at bytes 4-15), the data's
    offset at byte 24; then each column of `column_width` pixels, whole from top to bottom, 3 x uint16 LE
    per pixel (12-bit values)."""
    h, w = image12.shape[:2]
    header = bytearray(32)
    header[0:2] = b"GN"
    header[4:16] = np.array([w, h, column_width], "<i4").tobytes()
    header[24:28] = np.array([32], "<i4").tobytes()
    columns = [np.ascontiguousarray(image12[:, x:x + column_width]).astype("<u2").tobytes()
               for x in range(0, w, column_width)]
    Path(path).write_bytes(bytes(header) + b"".join(columns))


def write_vmu(folder, image: np.ndarray, *, column_width: int = 64, map_scale: int = 4, name: str = "slide",
              macro: bool = True) -> Path:
    """The image as 12-bit samples (8-bit values x 16 + a varying low nibble, so the narrowing shift matters)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    h, w = image.shape[:2]
    rng = np.random.default_rng(3)
    twelve = image.astype(np.uint16) * 16 + rng.integers(0, 16, image.shape, dtype=np.uint16)
    write_ngr(folder / f"{name}.ngr", twelve, column_width)
    small = twelve[::map_scale, ::map_scale]
    write_ngr(folder / f"{name}_map.ngr", small, column_width // map_scale or 1)
    keys = {"ImageFile": f"{name}.ngr", "MapFile": f"{name}_map.ngr", "BitsPerPixel": "36", "PixelOrder": "RGB",
            "SourceLens": "40", "PhysicalWidth": str(w * 230), "PhysicalHeight": str(h * 230)}
    if macro:
        (folder / f"{name}_macro.jpg").write_bytes(encode_jpeg(np.full((100, 300, 3), 128, np.uint8)))
        keys["MacroImage"] = f"{name}_macro.jpg"
    index = folder / f"{name}.vmu"
    index.write_text("[Uncompressed Virtual Microscope Specimen]\r\n" + "".join(f"{k}={v}\r\n" for k, v in keys.items()))
    return index
