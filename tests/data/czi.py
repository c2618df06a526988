"""A writer of Zeiss CZI slides (ZISRAW segments: file header, subblock directory, subblocks, metadata XML,
attachment directory and attachments), laid out as OpenSlide 4.0.1 reads them, for testing against it
(uncompressed and zstd) and against czifile + imagecodecs (JPEG XR, which OpenSlide cannot read).

A scene is a mosaic of tiles of `tile` pixels from a ground-truth `world` image (tinted per tile so that
overlaps show which tile is drawn; neighbours overlap by `overlap`), stored at downsamples 1, 2, 4, ...
(pyramid subblocks: each level's tiles cover the same area at 1/2^k); pixels are BGR24 or BGR48. A world of
planes - (T, C, Z, H, W) grey samples (uint8, uint16 or float32: GRAY8, GRAY16, GRAY32FLOAT) or
(T, 1, Z, H, W, 3) RGB - stores every plane's mosaic with its C, Z and T indices (Z and T dimensions only
where there are several), and the metadata names the channels (`channels`: dicts of Name, Color "#AARRGGBB",
ExcitationWavelength, EmissionWavelength, ExposureTime in nanoseconds)."""

from __future__ import annotations

import struct
import uuid
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

import numpy as np

PRIMARY_GUID = uuid.UUID("7f1e8a52-0c3d-4a8e-9e55-0123456789ab").bytes
FILE_GUID = uuid.UUID("1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901").bytes


def _seg(sid: str, data: bytes, allocated: Optional[int] = None) -> bytes:
    used = len(data)
    alloc = allocated if allocated is not None else -(-used // 32) * 32
    return sid.encode().ljust(16, b"\0") + struct.pack("<qq", alloc, used) + data + bytes(alloc - used)


def _down(image: np.ndarray, f: int) -> np.ndarray:
    if f == 1:
        return image
    h, w = image.shape[:2]
    mean = image[: h // f * f, : w // f * f].reshape(h // f, f, w // f, f, image.shape[2]).mean(axis=(1, 3))
    return mean.astype(image.dtype) if image.dtype == np.float32 else mean.round().astype(image.dtype)


def _dv(pixel_type: int, file_pos: int, compression: int, dims: List[Tuple[str, int, int, int]], pyramid: int) -> bytes:
    head = b"DV" + struct.pack("<iqiib1s4si", pixel_type, file_pos, 0, compression, pyramid, b"\0", bytes(4), len(dims))
    return head + b"".join(d.encode().ljust(4, b"\0") + struct.pack("<iifi", start, size, 0.0, stored) for d, start, size, stored in dims)


def _encode(pixels: np.ndarray, compression: int, hilo: bool) -> bytes:
    raw = np.ascontiguousarray(pixels).tobytes()
    if compression == 0:
        return raw
    if compression in (5, 6):
        import imagecodecs

        if compression == 6 and hilo:
            a = np.frombuffer(raw, np.uint8)
            raw = np.concatenate([a[0::2], a[1::2]]).tobytes()
        payload = imagecodecs.zstd_encode(raw, level=3)
        if compression == 5:
            return payload
        return (bytes([3, 1, 1]) if hilo else bytes([1])) + payload
    if compression == 4:
        import imagecodecs

        grey = pixels[..., 0] if pixels.shape[-1] == 1 else pixels
        return imagecodecs.jpegxr_encode(np.ascontiguousarray(grey), level=0.95)
    raise ValueError(compression)


def _subblock(pixel_type: int, compression: int, dims, pixels: np.ndarray, hilo: bool, pyramid: int) -> Tuple[bytes, callable, int]:
    """The subblock's segment, given its own file position (the DV entry repeats it)."""
    data = _encode(pixels, compression, hilo)

    def at(pos: int) -> bytes:
        entry = _dv(pixel_type, pos, compression, dims, pyramid)
        head = struct.pack("<iiq", 0, 0, len(data)) + entry
        head = head.ljust(288 - 32, b"\0")
        return _seg("ZISRAWSUBBLOCK", head + data)

    return data, at, len(dims)


GREY_TYPES = {np.dtype(np.uint8): (0, "Gray8"), np.dtype(np.uint16): (1, "Gray16"), np.dtype(np.float32): (2, "Gray32Float")}


def _planes(world: np.ndarray) -> np.ndarray:
    """The world as (T, C, Z, H, W, S): an RGB image, or planes (see the module's docstring)."""
    if world.ndim == 3:
        return world[None, None, None]
    if world.ndim == 5:
        return world[..., None]
    if world.ndim == 6 and world.shape[1] == 1 and world.shape[-1] == 3:
        return world
    raise ValueError(f"a CZI world is (H, W, 3), (T, C, Z, H, W) or (T, 1, Z, H, W, 3), not {world.shape}")


def _tinted(part: np.ndarray, tint: int, rgb: bool, pixel: str) -> np.ndarray:
    """A tile of the world with `tint` added, as stored: RGB becomes BGR (x257 for BGR48)."""
    if part.dtype == np.float32:
        return part + np.float32(tint)
    top = np.iinfo(part.dtype).max
    part = np.clip(part.astype(np.int64) + tint, 0, top).astype(part.dtype)
    if not rgb:
        return part
    part = part[..., ::-1]
    return part.astype(np.uint16) * 257 if pixel == "bgr48" else part


def _channels_xml(channels: Sequence[dict], count: int, pixel_name: str) -> str:
    out = []
    for i in range(count):
        info = dict(channels[i]) if i < len(channels) else {}
        name = info.pop("Name", f"C{i}")
        out.append(f'<Channel Id="Channel:{i}" Name="{name}"><PixelType>{pixel_name}</PixelType>'
                   + "".join(f"<{k}>{v}</{k}>" for k, v in info.items()) + "</Channel>")
    return "".join(out)


def build_czi(world: np.ndarray, *, tile: int = 128, overlap: Tuple[int, int] = (0, 0), levels: int = 3,
              compression: int = 0, pixel: str = "bgr24", hilo: bool = False, scenes: Sequence[Tuple[int, int, int, int]] = ((0, 0, 4, 3),),
              origin: Tuple[int, int] = (-1000, 2000), tint: int = 3, attachments: Sequence[Tuple[str, str, bytes]] = (),
              extra_xml: str = "", size_override: Optional[Tuple[int, int]] = None, reverse_m: bool = False,
              channels: Sequence[dict] = ({"Name": "TL Brightfield"},)) -> bytes:
    """The bytes of a CZI. `scenes`: (x, y, cols, rows) in world pixels per scene; `origin`: the stage
    coordinate of world pixel (0, 0) (CZI coordinates may be negative); `attachments`: (name, type, bytes);
    `reverse_m`: mosaic indices decreasing in row-major order instead of increasing."""
    stack = _planes(world)
    size_t, size_c, size_z = stack.shape[:3]
    rgb = stack.shape[-1] == 3
    if rgb:
        pixel_type, pixel_name = (3, "Bgr24") if pixel == "bgr24" else (4, "Bgr48")
    else:
        pixel_type, pixel_name = GREY_TYPES[stack.dtype]
    ox, oy = overlap
    adv_x, adv_y = tile - ox, tile - oy
    entries: List[Tuple[bytes, callable, int]] = []
    m = 0
    max_x = max_y = 0
    for s, (sx, sy, cols, rows) in enumerate(scenes):
        for r in range(rows):
            for c in range(cols):
                x, y = sx + c * adv_x, sy + r * adv_y
                for t in range(size_t):
                    for ch in range(size_c):
                        for z in range(size_z):
                            part = stack[t, ch, z, y:y + tile, x:x + tile]
                            part = _tinted(part, ((c + 2 * r + s) % 5 - 2) * tint, rgb, pixel)
                            ph, pw = part.shape[:2]
                            max_x, max_y = max(max_x, x + pw), max(max_y, y + ph)
                            plane_dims = [("C", ch, 1, 1)] + ([("Z", z, 1, 1)] if size_z > 1 else []) + \
                                ([("T", t, 1, 1)] if size_t > 1 else [])
                            for k in range(levels):
                                f = 1 << k
                                # pyramid subblocks: one per level-0 tile here (real files merge several; the reader
                                # does not care)
                                dims = [("X", origin[0] + x, pw, pw // f), ("Y", origin[1] + y, ph, ph // f)] + plane_dims + \
                                    [("S", s, 1, 1), ("M", (10000 - m) if reverse_m else m, 1, 1)]
                                entries.append(_subblock(pixel_type, compression, dims, _down(part, f), hilo,
                                                         0 if k == 0 else 2))
                m += 1
    w, h = size_override or (max_x - min(s[0] for s in scenes), max_y - min(s[1] for s in scenes))
    colours = "".join(f'<Channel Id="Channel:{i}"><Color>{(channels[i] if i < len(channels) else {}).get("Color", "#FFFFFFFF")}</Color></Channel>'
                      for i in range(size_c))
    xml = (f'<ImageDocument><Metadata><Information><Image><SizeX>{w}</SizeX><SizeY>{h}</SizeY><SizeS>{len(scenes)}</SizeS>'
           + (f'<SizeC>{size_c}</SizeC>' if not rgb else '') + (f'<SizeZ>{size_z}</SizeZ>' if size_z > 1 else '')
           + (f'<SizeT>{size_t}</SizeT>' if size_t > 1 else '') +
           f'<PixelType>{pixel_name}</PixelType><ComponentBitCount>{stack.dtype.itemsize * 8}</ComponentBitCount>'
           f'<ObjectiveSettings><ObjectiveRef Id="Objective:1"/></ObjectiveSettings>'
           f'<Dimensions><Channels>{_channels_xml(channels, size_c, pixel_name)}'
           f'</Channels><S><Scenes>' + "".join(f'<Scene Index="{i}" Name="Scene {i}"><Position>0,0</Position></Scene>' for i in range(len(scenes))) +
           f'</Scenes></S></Dimensions></Image>'
           f'<Instrument><Objectives><Objective Id="Objective:1" Name="Plan-Apochromat 20x/0.8">'
           f'<NominalMagnification>20</NominalMagnification><LensNA>0.8</LensNA></Objective></Objectives>'
           f'<Microscopes><Microscope Id="Microscope:1" Name="Axioscan 7"/></Microscopes></Instrument>'
           f'<Application><Name>tilewise</Name><Version>1.0</Version></Application>{extra_xml}</Information>'
           f'<Scaling><Items><Distance Id="X"><Value>2.2E-07</Value><DefaultUnitFormat>µm</DefaultUnitFormat></Distance>'
           f'<Distance Id="Y"><Value>2.2E-07</Value></Distance>'
           + ('<Distance Id="Z"><Value>2E-06</Value></Distance>' if size_z > 1 else '') + '</Items></Scaling>'
           f'<DisplaySetting><Channels>{colours}</Channels></DisplaySetting>'
           f'</Metadata></ImageDocument>').encode()
    # Layout: header, directory, subblocks, metadata, attachments, attachment directory.
    out = bytearray(_seg("ZISRAWFILE", bytes(80), allocated=512))
    dir_entries_len = sum(len(_dv(0, 0, 0, [("X", 0, 0, 0)] * ndim, 0)) for _, _, ndim in entries)
    dir_pos = len(out)
    dir_size = 128 + dir_entries_len
    out += bytes(32 + (-(-dir_size // 32) * 32))
    positions = []
    for data, at, _ in entries:
        positions.append(len(out))
        out += at(len(out))
    meta_pos = len(out)
    out += _seg("ZISRAWMETADATA", struct.pack("<ii", len(xml), 0) + bytes(248) + xml)
    att_entries = []
    for name, ftype, payload in attachments:
        pos = len(out)
        entry = b"A1" + bytes(10) + struct.pack("<qi", pos, 0) + bytes(16) + ftype.encode().ljust(8, b"\0") + name.encode().ljust(80, b"\0")
        out += _seg("ZISRAWATTACH", struct.pack("<i", len(payload)) + bytes(12) + entry + bytes(112) + payload)
        att_entries.append(entry)
    att_pos = len(out)
    out += _seg("ZISRAWATTDIR", struct.pack("<i", len(att_entries)) + bytes(252) + b"".join(att_entries))
    # The directory and the header, now that positions are known.
    blob = bytearray()
    for (data, at, ndim), pos in zip(entries, positions):
        seg = at(pos)
        blob += seg[32 + 16:32 + 16 + len(_dv(0, 0, 0, [("X", 0, 0, 0)] * ndim, 0))]
    directory = struct.pack("<i", len(entries)) + bytes(124) + bytes(blob)
    out[dir_pos:dir_pos + 32 + len(directory)] = b"ZISRAWDIRECTORY".ljust(16, b"\0") + struct.pack("<qq", -(-len(directory) // 32) * 32, len(directory)) + directory
    header = struct.pack("<iiii", 1, 0, 0, 0) + PRIMARY_GUID + FILE_GUID + struct.pack("<iqqiq", 0, dir_pos, meta_pos, 0, att_pos)
    out[32:32 + len(header)] = header
    return bytes(out)


def write_czi(path, world: np.ndarray, *, label: bool = True, preview: bool = True, **kw) -> Path:
    """Writes a CZI with a JPEG label and an embedded-CZI slide preview; returns its path."""
    from PIL import Image
    import io

    path = Path(path)
    atts = list(kw.pop("attachments", ()))
    if label:
        buf = io.BytesIO()
        lab = np.zeros((96, 240, 3), np.uint8)
        lab[..., 1] = 180
        Image.fromarray(lab).save(buf, "JPEG", quality=90)
        atts.append(("Label", "JPG", buf.getvalue()))
    if preview:
        small = np.ascontiguousarray(_down(world, 8)[:96, :128])
        atts.append(("SlidePreview", "CZI", build_czi(small, tile=small.shape[1], levels=1, scenes=((0, 0, 1, 1),),
                                                     origin=(0, 0), tint=0)))
    path.write_bytes(build_czi(world, attachments=atts, **kw))
    return path
