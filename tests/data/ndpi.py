"""A writer for Hamamatsu NDPI-like files, for testing against OpenSlide 4.0.1.

NDPI is classic little-endian TIFF whose first-IFD offset and next-IFD links are 8 bytes wide; after each
directory's next link come the high 32 bits of every entry's value/offset field (4 bytes per entry), so
that strip and tag-data offsets may pass 4 GiB. Each directory holds one JPEG strip: pyramid levels (SourceLens > 0, largest first), other focal
planes of a level, the macro (SourceLens -1) and the map (-2). Level JPEGs have restart markers every
`restart_interval` MCUs; the McuStarts tag (65426) lists where each interval's data begins, relative to
the strip. Pillow (libjpeg-turbo) encodes the JPEGs with restart markers.

With `data_at` beyond 4 GiB the file is written sparse: the first directory (and its level) stays at the
start, everything after it lies beyond `data_at`, so the high-bit restoration of strip, tag-data and IFD
offsets is exercised without writing gigabytes. (OpenSlide 4.0.1 does not open a file whose first directory
itself lies beyond 4 GiB.)
"""

from __future__ import annotations

import io
import os
import struct
from typing import List, Sequence, Tuple

import numpy as np
from PIL import Image

BYTE, ASCII, SHORT, LONG, RATIONAL, SLONG, FLOAT = 1, 2, 3, 4, 5, 9, 11

NDPI_FORMAT_FLAG, SOURCE_LENS, X_OFFSET, Y_OFFSET, FOCAL_PLANE = 65420, 65421, 65422, 65423, 65424
MCU_STARTS, REFERENCE, PROPERTY_MAP = 65426, 65427, 65449


def encode_jpeg(image: np.ndarray, *, quality: int = 90, restart_interval: int = 0, subsampling: str = "4:2:0") -> bytes:
    b = io.BytesIO()
    options = {"quality": quality, "subsampling": subsampling}
    if restart_interval:
        options["restart_marker_blocks"] = restart_interval
    Image.fromarray(image).save(b, "JPEG", **options)
    return b.getvalue()


def interval_starts(jpeg: bytes) -> List[int]:
    """Where each restart interval's entropy-coded data begins: after the SOS segment, then after each
    restart marker."""
    pos = 2
    while True:
        marker = jpeg[pos + 1]
        length = struct.unpack_from(">H", jpeg, pos + 2)[0]
        pos += 2 + length
        if marker == 0xDA:
            break
    starts = [pos]
    i = pos
    while True:
        i = jpeg.find(b"\xff", i)
        if i < 0 or i + 1 >= len(jpeg):
            return starts
        if 0xD0 <= jpeg[i + 1] <= 0xD7:
            starts.append(i + 2)
        i += 2 if jpeg[i + 1] != 0xFF else 1


def _encode(typ: int, value) -> Tuple[bytes, int]:
    if typ == ASCII:
        raw = value.encode("latin-1") + b"\0"
        return raw, len(raw)
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    fmt = {BYTE: "B", SHORT: "H", LONG: "I", SLONG: "i", FLOAT: "f"}.get(typ)
    if fmt:
        return struct.pack(f"<{len(values)}{fmt}", *values), len(values)
    if typ == RATIONAL:
        return b"".join(struct.pack("<II", n, d) for n, d in values), len(values)
    raise ValueError(typ)


class NdpiWriter:
    def __init__(self, data_at: int = 0, edit=None):
        self.dirs: List[Tuple[list, bytes]] = []  # (tags, strip JPEG)
        self.data_at = data_at
        self.edit = edit  # edit(directory index, tags) -> tags, for damaged variants

    def add(self, image_size: Tuple[int, int], jpeg: bytes, lens: float, *, focal_plane: int = 0,
            mcu_starts: Sequence[int] = (), extra: Sequence[tuple] = ()) -> None:
        w, h = image_size
        tags = [(256, LONG, w), (257, LONG, h), (258, SHORT, [8, 8, 8]), (259, SHORT, 7), (262, SHORT, 6),
                (271, ASCII, "Hamamatsu"), (272, ASCII, "C13210"), (277, SHORT, 3), (278, LONG, h),
                (282, RATIONAL, [(43478, 1)]), (283, RATIONAL, [(43478, 1)]), (296, SHORT, 3),
                (305, ASCII, "NDP.scan 3.2.4"), (306, ASCII, "2026:11:30 10:00:00"),
                (NDPI_FORMAT_FLAG, LONG, 1), (SOURCE_LENS, FLOAT, lens), (X_OFFSET, SLONG, -1234),
                (Y_OFFSET, SLONG, 5678), (FOCAL_PLANE, SLONG, focal_plane), (REFERENCE, ASCII, "TW-0001")]
        if mcu_starts:
            tags.append((MCU_STARTS, LONG, list(mcu_starts)))
        tags += list(extra)
        self.dirs.append((tags, jpeg))

    def write(self, path: "str | os.PathLike[str]") -> None:
        parts = []  # (file offset, bytes)
        body = bytearray()
        base = 16
        ifd_positions = []
        for k, (tags, jpeg) in enumerate(self.dirs):
            if self.edit:
                tags = self.edit(k, list(tags))
            if k == 1 and self.data_at:
                parts.append((base, body))
                body, base = bytearray(), self.data_at
            strip = base + len(body)
            body += jpeg
            tags = sorted(tags + [(273, LONG, strip & 0xFFFFFFFF), (279, LONG, len(jpeg))], key=lambda t: t[0])
            entries = []
            for tag, typ, value in tags:
                raw, count = _encode(typ, value)
                if len(raw) > 4:
                    if len(body) % 2:
                        body += b"\0"
                    at = base + len(body)
                    entries.append((tag, typ, count, struct.pack("<I", at & 0xFFFFFFFF), at >> 32))
                    body += raw
                else:
                    entries.append((tag, typ, count, raw.ljust(4, b"\0"), strip >> 32 if tag == 273 else 0))
            if len(body) % 2:
                body += b"\0"
            ifd_positions.append(base + len(body))
            body += struct.pack("<H", len(entries))
            for tag, typ, count, value, _ in entries:
                body += struct.pack("<HHI", tag, typ, count) + value
            body += b"\0" * 8  # next IFD (8 bytes in NDPI), patched below
            body += b"".join(struct.pack("<I", high) for *_, high in entries)
        parts.append((base, body))
        for a, b in zip(ifd_positions, ifd_positions[1:] + [0]):
            start, part = next((o, p) for o, p in parts if o <= a < o + len(p))
            n = struct.unpack_from("<H", part, a - start)[0]
            struct.pack_into("<Q", part, a - start + 2 + 12 * n, b)
        with open(path, "wb") as f:
            f.write(b"II*\0" + struct.pack("<Q", ifd_positions[0]) + b"\0" * 4)
            for offset, part in parts:
                f.seek(offset)
                f.write(bytes(part))


def write_ndpi(path, image: np.ndarray, *, levels: int = 3, restart_interval: int = 8, subsampling: str = "4:2:0",
               quality: int = 90, lens: float = 20.0, with_mcu_starts: bool = True, focal_planes: Sequence[int] = (),
               data_at: int = 0, macro: bool = True, properties: str = "", edit=None,
               planes_at_every_level: bool = False) -> None:
    """A pyramid of `levels` levels halving each time (the smallest without restart markers), other focal
    planes (the level shifted right by 3 pixels a plane) of level 0 or of every level, a macro and a map
    image."""
    w = NdpiWriter(data_at, edit)
    props = [(PROPERTY_MAP, ASCII, properties)] if properties else []
    H, W = image.shape[:2]
    for k in range(levels):
        lw, lh = W >> k, H >> k
        level = image if k == 0 else np.asarray(Image.fromarray(image).resize((lw, lh), Image.BILINEAR))
        # One interval for every level, or one per level (a row's MCUs must be a multiple of it).
        ri = (restart_interval[k] if isinstance(restart_interval, (list, tuple)) else restart_interval) if k < levels - 1 else 0
        jpeg = encode_jpeg(level, quality=quality, restart_interval=ri, subsampling=subsampling)
        starts = interval_starts(jpeg) if ri and with_mcu_starts else []
        w.add((lw, lh), jpeg, lens / (2 ** k), mcu_starts=starts, extra=props if k == 0 else ())
        for plane in focal_planes if k == 0 or planes_at_every_level else ():
            other = encode_jpeg(np.roll(level, 3 * plane, axis=1), quality=quality, restart_interval=ri,
                                subsampling=subsampling)
            w.add((lw, lh), other, lens / (2 ** k), focal_plane=plane,
                  mcu_starts=interval_starts(other) if ri and with_mcu_starts else [])
    if macro:
        mac = np.zeros((160, 480, 3), np.uint8)
        mac[:, :, 1] = 200
        mac[40:120, 100:380] = (120, 60, 160)
        w.add((480, 160), encode_jpeg(mac), -1.0)
        w.add((240, 80), encode_jpeg(mac[::2, ::2].copy()), -2.0)
    w.write(path)
