"""A writer of Olympus/Evident cellSens VSI slides: `name.vsi`, a little-endian TIFF whose metadata stream
(the tag volumes that follow the 8-byte TIFF header) describes the stacks, and beside it
`_name_/stack<N>/frame_t.ets`, one ETS file per stack holding its tiles and pyramid, as slideio 2.10 and
Bio-Formats read them.

The metadata: a collection volume (tag 2000) of one multidimensional image volume (2001) per stack, each with
its stack properties (2005: name 2030, type 2074 - 0 an image, 1 the overview -, calibration 2019 in um per
pixel), an image frame volume (2002) whose external file properties (2018) say the pixels are in an ETS file
(20005) and give the image's boundary (2053: x, y, width, height), and one dimension description volume (2007,
its second tag the dimension's index d: tile coordinate d + 2) per dimension beyond X and Y, whose dimension
parameters (2008) give the kind (2023: 1 Z, 2 T, 4 C) and, one per channel (second tag the channel), the
channel's name (2419).

An ETS file: the SIS header (64 bytes: dimension count, where the ETS header and the tile table lie), the ETS
header (sample type 2 uint8 / 4 uint16 / 9 float32, samples per pixel, colour space, codec 0 raw / 2 JPEG /
3 JPEG 2000 / 8 PNG, tile size, background, whether the last coordinate is the pyramid level), the tiles, and the
table: per tile its coordinates (x, y, the stack's dimensions in order, level), offset and length. Every tile
is tile x tile pixels; the part past the image's edge holds zeros.

A stack is a world of (C, Z, H, W) grey samples (a C dimension even for one channel, as fluorescence stacks
have) or (1, Z, H, W, 3) RGB; level k is level k-1 halved (rounded
up, 2x2 means), down to one tile. `write_vsi` returns each stack's levels as (C, Z, h, w[, 3]) arrays - what
the files hold before lossy coding - so that tests compare every level, not only what the oracle reads."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

_SAMPLE = {np.dtype(np.uint8): 2, np.dtype(np.uint16): 4, np.dtype(np.float32): 9}
# "j2k12": JPEG 2000 code streams of 12-bit precision (uint16 worlds below 4096), stored as codec 3.
_CODEC = {"raw": 0, "jpeg": 2, "j2k": 3, "j2k12": 3, "png": 8}

# Field types of the metadata stream.
_INT, _DOUBLE_2, _TCHAR, _INT_RECT = 5, 260, 13, 259
_EXTENDED, _EXTRA_TAG = 0x10000000, 0x8000000
_NEW_VOLUME, _PROPERTY_SET = 0, 1


class _Tag:
    """One field of a volume: a value, or (extended) a nested volume of child tags."""

    def __init__(self, tag: int, field_type: int, data: bytes = b"", children: Optional[List["_Tag"]] = None,
                 second: Optional[int] = None):
        self.tag, self.field_type, self.data, self.children, self.second = tag, field_type, data, children, second


def _value(tag: int, kind: int, value, second: Optional[int] = None) -> _Tag:
    if kind == _INT:
        data = struct.pack("<i", value)
    elif kind == _DOUBLE_2:
        data = struct.pack("<2d", *value)
    elif kind == _INT_RECT:
        data = struct.pack("<4i", *value)
    else:
        data = value.encode("utf-16-le")
    return _Tag(tag, kind, data, second=second)


def _volume(tag: int, extended: int, children: List[_Tag], second: Optional[int] = None) -> _Tag:
    return _Tag(tag, _EXTENDED | extended, children=children, second=second)


def _encode_volume(tags: Sequence[_Tag]) -> bytes:
    """A volume: its 24-byte header (size 24, magic 21321, first field at 24, the tag count) and its tags,
    each pointing at the next by its offset from the volume's header (0 for the last)."""
    body = []
    offset = 24
    encoded = []
    for t in tags:
        data = _encode_volume(t.children) if t.children is not None else t.data
        extra = b"" if t.second is None else struct.pack("<i", t.second)
        encoded.append((t, extra, data))
        offset += 16 + len(extra) + len(data)
    pos = 24
    for i, (t, extra, data) in enumerate(encoded):
        size = 16 + len(extra) + len(data)
        following = 0 if i == len(encoded) - 1 else pos + size
        field_type = t.field_type | (_EXTRA_TAG if t.second is not None else 0)
        body.append(struct.pack("<iiiI", field_type, t.tag, following, len(data)) + extra + data)
        pos += size
    return struct.pack("<HHIqII", 24, 21321, 0, 24, len(tags), 0) + b"".join(body)


def _stack_volume(name: str, kind: int, width: int, height: int, mpp: Tuple[float, float],
                  dims: Sequence[str], channel_names: Sequence[str]) -> _Tag:
    children = [
        _volume(2005, _PROPERTY_SET, [_value(2030, _TCHAR, name), _value(2074, _INT, kind),
                                      _value(2019, _DOUBLE_2, mpp)]),
        _volume(2002, _NEW_VOLUME, [
            _volume(2018, _PROPERTY_SET, [_value(20005, _INT, 1), _value(2053, _INT_RECT, (0, 0, width, height))]),
        ]),
    ]
    for d, dim in enumerate(dims):
        params = [_volume(2008, _PROPERTY_SET, [_value(2023, _INT, {"Z": 1, "T": 2, "C": 4}[dim])])]
        if dim == "C":
            params += [_volume(2008, _PROPERTY_SET, [_value(2419, _TCHAR, n)], second=c)
                       for c, n in enumerate(channel_names)]
        children.append(_volume(2007, _NEW_VOLUME, params, second=d))
    return _volume(2001, _NEW_VOLUME, children)


def _halve(image: np.ndarray) -> np.ndarray:
    """Image (h, w[, s]) halved, rounded up: edge pixels repeated to even sizes, then 2x2 means."""
    h, w = image.shape[:2]
    pad = [(0, h % 2), (0, w % 2)] + [(0, 0)] * (image.ndim - 2)
    p = np.pad(image.astype(np.float64), pad, mode="edge")
    m = p.reshape(p.shape[0] // 2, 2, p.shape[1] // 2, 2, *p.shape[2:]).mean(axis=(1, 3))
    return m.astype(np.float32) if image.dtype == np.float32 else np.round(m).astype(image.dtype)


def pyramid(world: np.ndarray, tile: int, levels: Optional[int] = None) -> List[np.ndarray]:
    """The stack's levels, (C, Z, h, w[, 3]) each, halving until a level fits one tile (or `levels`)."""
    out = [world]
    while (levels is None and max(out[-1].shape[2:4]) > tile) or (levels is not None and len(out) < levels):
        prev = out[-1]
        out.append(np.stack([np.stack([_halve(plane) for plane in planes]) for planes in prev]))
    return out


def _encode_tile(pixels: np.ndarray, codec: str, quality: int) -> bytes:
    if codec == "raw":
        return np.ascontiguousarray(pixels).astype(pixels.dtype.newbyteorder("<")).tobytes()
    import imagecodecs

    if codec == "jpeg":
        return imagecodecs.jpeg8_encode(pixels, level=quality)
    if codec == "png":
        return imagecodecs.png_encode(pixels)
    if codec == "j2k12":
        return imagecodecs.jpeg2k_encode(pixels, level=0, codecformat="J2K", reversible=True, bitspersample=12)
    return imagecodecs.jpeg2k_encode(pixels, level=0, codecformat="J2K", reversible=True)


def _write_ets(path: Path, levels: List[np.ndarray], tile: int, codec: str, dims: Sequence[str], rgb: bool,
               background: bytes, quality: int, drop: Optional[set]) -> None:
    dtype = levels[0].dtype
    coords_per_tile = 2 + len(dims) + 1
    tiles: List[Tuple[Tuple[int, ...], bytes]] = []
    for k, level in enumerate(levels):
        channels, zs, h, w = level.shape[:4]
        for c in range(channels):
            for z in range(zs):
                plane = level[c, z]
                for ty in range(-(-h // tile)):
                    for tx in range(-(-w // tile)):
                        if drop and (k, c, z, tx, ty) in drop:
                            continue
                        block = np.zeros((tile, tile) + plane.shape[2:], dtype)
                        part = plane[ty * tile:(ty + 1) * tile, tx * tile:(tx + 1) * tile]
                        block[:part.shape[0], :part.shape[1]] = part
                        extra = [{"C": c, "Z": z}[d] for d in dims]
                        tiles.append(((tx, ty, *extra, k), _encode_tile(block, codec, quality)))
    ets_header = struct.pack("<4sIIIIIIIII", b"ETS\0", 0x30001, _SAMPLE[dtype], 3 if rgb else 1, 3 if rgb else 1,
                             _CODEC[codec], quality, tile, tile, 1)
    ets_header += bytes(17 * 4) + background.ljust(40, b"\0") + struct.pack("<II", 0, 1) + bytes(18 * 4)
    assert len(ets_header) == 228
    data = bytearray(64) + ets_header
    table = []
    for coords, payload in tiles:
        table.append(struct.pack("<I", 0) + struct.pack(f"<{coords_per_tile}i", *coords) +
                     struct.pack("<qII", len(data), len(payload), 0))
        data += payload
    table_pos = len(data)
    data += b"".join(table)
    data[:64] = struct.pack("<4sIIIQIIQIIQII", b"SIS\0", 64, 2, coords_per_tile, 64, 228, 0, table_pos, len(tiles),
                            0, 0, 0, 0)
    path.write_bytes(bytes(data))


def _tiff_with_metadata(metadata: bytes, overview: np.ndarray) -> bytes:
    """The .vsi: TIFF header, the metadata stream at offset 8, then one strip image (the overview, RGB)."""
    h, w = overview.shape[:2]
    pixels = np.ascontiguousarray(overview, np.uint8).tobytes()
    ifd_pos = 8 + len(metadata)
    ifd_pos += ifd_pos % 2
    entries = [(256, 4, 1, w), (257, 4, 1, h), (258, 3, 1, 8), (259, 3, 1, 1), (262, 3, 1, 2), (273, 4, 1, 0),
               (277, 3, 1, 3), (278, 4, 1, h), (279, 4, 1, len(pixels))]
    ifd_size = 2 + 12 * len(entries) + 4
    bps_pos = ifd_pos + ifd_size
    strip_pos = bps_pos + 6
    ifd = struct.pack("<H", len(entries))
    for tag, kind, count, value in entries:
        if tag == 258:
            ifd += struct.pack("<HHII", tag, kind, 3, bps_pos)
        elif tag == 273:
            ifd += struct.pack("<HHII", tag, kind, count, strip_pos)
        else:
            ifd += struct.pack("<HHI", tag, kind, count) + (struct.pack("<HH", value, 0) if kind == 3 else struct.pack("<I", value))
    ifd += struct.pack("<I", 0)
    out = bytearray(b"II*\0" + struct.pack("<I", ifd_pos)) + metadata
    out += bytes(ifd_pos - len(out)) + ifd + struct.pack("<3H", 8, 8, 8) + pixels
    return bytes(out)


def write_vsi(path: Path, world: np.ndarray, *, tile: int = 256, codec: str = "raw", quality: int = 90,
              levels: Optional[int] = None, channel_names: Optional[Sequence[str]] = None,
              mpp: Tuple[float, float] = (0.25, 0.25), background: Optional[Sequence[int]] = None,
              drop: Optional[set] = None, overview: Optional[np.ndarray] = None,
              stack_name: str = "40x", more_images: Sequence[np.ndarray] = ()) -> Dict[str, List[np.ndarray]]:
    """Writes `path` (.vsi) and its ETS files. `world`: (C, Z, H, W) grey or (1, Z, H, W, 3) RGB uint8.
    `drop`: tiles (level, c, z, tile x, tile y) left out of the table (read as background). `overview`: an RGB
    image stored as a stack of type overview after the images. `more_images`: worlds of further image stacks
    (scan areas), each its own stack after the first. Returns {"image": levels[, "image1", ...][, "overview":
    levels]}."""
    path = Path(path)
    rgb = world.ndim == 5
    if rgb and (world.shape[0] != 1 or world.shape[4] != 3 or world.dtype != np.uint8):
        raise ValueError("an RGB world is (1, Z, H, W, 3) uint8")
    if world.dtype not in _SAMPLE:
        raise ValueError(f"sample type {world.dtype} has no ETS code")
    channels, zs, h, w = world.shape[:4]
    dims = [d for d, n in (("C", channels), ("Z", zs)) if n > 1 or (d == "C" and not rgb)]
    names = list(channel_names) if channel_names else [f"Channel {c}" for c in range(channels)]
    folder = path.parent / f"_{path.stem}_"
    stacks = [("image", world, stack_name, 0, dims)]
    for i, more in enumerate(more_images, 1):
        more_dims = [d for d, n in (("C", more.shape[0]), ("Z", more.shape[1])) if n > 1 or (d == "C" and more.ndim == 4)]
        stacks.append((f"image{i}", more, f"{stack_name} area {i + 1}", 0, more_dims))
    if overview is not None:
        stacks.append(("overview", overview[None, None], "Overview", 1, []))
    truth: Dict[str, List[np.ndarray]] = {}
    volumes = []
    for i, (key, pixels, name, kind, stack_dims) in enumerate(stacks):
        lv = pyramid(pixels, tile, levels if key == "image" else None) if key != "overview" else pyramid(pixels, tile)
        truth[key] = lv
        bg = bytes(background) if background is not None else (b"\xff\xff\xff" if pixels.ndim == 5 else b"")
        stack = folder / f"stack{1 + 10000 * i}"
        stack.mkdir(parents=True, exist_ok=True)
        _write_ets(stack / "frame_t.ets", lv, tile, "jpeg" if key == "overview" else codec, stack_dims,
                   pixels.ndim == 5, bg, quality, drop if key == "image" else None)
        volumes.append(_stack_volume(name, kind, pixels.shape[3], pixels.shape[2],
                                     (10.0, 10.0) if key == "overview" else mpp, stack_dims, names))
    metadata = _encode_volume([_volume(2000, _NEW_VOLUME, volumes)])
    thumb = truth["image"][-1][0, 0]
    thumb = np.repeat(thumb[..., None], 3, axis=2) if thumb.ndim == 2 else thumb
    if thumb.dtype != np.uint8:
        thumb = (thumb.astype(np.float64) / max(float(thumb.max()), 1.0) * 255).astype(np.uint8)
    path.write_bytes(_tiff_with_metadata(metadata, thumb))
    return truth
