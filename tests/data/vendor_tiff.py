"""Writers for scanner-like TIFF files: Aperio SVS and Philips TIFF.

tifffile (the oracle reader) cannot write abbreviated JPEG tiles with shared JPEGTables, photometric-RGB
JPEG, Aperio's JPEG 2000 compressions or arbitrary directory layouts, so these files are assembled by a
small classic-TIFF writer here. Tile payloads come from imagecodecs (libjpeg-turbo, OpenJPEG, zlib).
"""

from __future__ import annotations

import base64
import os
import struct
from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple

import numpy as np

import slidegen


def _codecs():
    """imagecodecs, imported when a tile is encoded (the TIFF writer itself needs only numpy: the GPU
    machine's bench/make_large_slide.py uses it with tiles encoded by OpenCV)."""
    import imagecodecs

    return imagecodecs


# TIFF field types
BYTE, ASCII, SHORT, LONG, RATIONAL, UNDEFINED = 1, 2, 3, 4, 5, 7


@dataclass
class Ifd:
    tags: List[Tuple[int, int, object]] = field(default_factory=list)  # (tag, type, value(s) or bytes)
    chunks: List[bytes] = field(default_factory=list)
    chunks_tag: Tuple[int, int] = (324, 325)  # (offsets, byte counts): tiles or strips


class ClassicTiffWriter:
    """Little-endian classic TIFF: chunk data first, then each IFD with its out-of-line values."""

    def __init__(self):
        self.ifds: List[Ifd] = []

    def add(self, ifd: Ifd) -> None:
        self.ifds.append(ifd)

    def write(self, path: "str | os.PathLike[str]") -> None:
        body = bytearray(b"II*\0\0\0\0\0")
        chunk_offsets = []
        for ifd in self.ifds:
            offs = []
            for chunk in ifd.chunks:
                if len(body) % 2:
                    body += b"\0"
                offs.append(len(body) if chunk else 0)
                body += chunk
            chunk_offsets.append(offs)
        ifd_positions = []
        for k, ifd in enumerate(self.ifds):
            tags = list(ifd.tags)
            tags.append((ifd.chunks_tag[0], LONG, chunk_offsets[k]))
            tags.append((ifd.chunks_tag[1], LONG, [len(c) for c in ifd.chunks]))
            tags.sort(key=lambda t: t[0])
            entries = []
            for tag, typ, value in tags:
                raw, count = self._encode(typ, value)
                if len(raw) > 4:
                    if len(body) % 2:
                        body += b"\0"
                    entries.append((tag, typ, count, struct.pack("<I", len(body))))
                    body += raw
                else:
                    entries.append((tag, typ, count, raw.ljust(4, b"\0")))
            if len(body) % 2:
                body += b"\0"
            ifd_positions.append(len(body))
            body += struct.pack("<H", len(entries))
            for tag, typ, count, value in entries:
                body += struct.pack("<HHI", tag, typ, count) + value
            body += b"\0\0\0\0"  # next IFD, patched below
        struct.pack_into("<I", body, 4, ifd_positions[0])
        for a, b in zip(ifd_positions, ifd_positions[1:]):
            n = struct.unpack_from("<H", body, a)[0]
            struct.pack_into("<I", body, a + 2 + 12 * n, b)
        with open(path, "wb") as f:
            f.write(bytes(body))

    @staticmethod
    def _encode(typ, value):
        if typ == ASCII:
            raw = (value.encode("latin-1") if isinstance(value, str) else bytes(value)) + b"\0"
            return raw, len(raw)
        if typ in (BYTE, UNDEFINED):
            return bytes(value), len(value)
        values = list(value) if isinstance(value, (list, tuple)) else [value]
        if typ == SHORT:
            return struct.pack(f"<{len(values)}H", *values), len(values)
        if typ == LONG:
            return struct.pack(f"<{len(values)}I", *values), len(values)
        if typ == RATIONAL:
            return b"".join(struct.pack("<II", n, d) for n, d in values), len(values)
        raise ValueError(typ)


def split_jpeg_tables(jpeg: bytes) -> Tuple[bytes, bytes]:
    """Splits a JPEG into (tables-only stream, abbreviated image stream without DQT/DHT)."""
    assert jpeg[:2] == b"\xff\xd8"
    tables, image = bytearray(b"\xff\xd8"), bytearray(b"\xff\xd8")
    i = 2
    while i < len(jpeg):
        marker = jpeg[i + 1]
        if marker == 0xDA:  # start of scan: the rest is entropy-coded data
            image += jpeg[i:]
            break
        length = struct.unpack(">H", jpeg[i + 2 : i + 4])[0]
        segment = jpeg[i : i + 2 + length]
        (tables if marker in (0xDB, 0xC4) else image).extend(segment)
        i += 2 + length
    tables += b"\xff\xd9"
    return bytes(tables), bytes(image)


def _tiles(image: np.ndarray, tile: int) -> List[np.ndarray]:
    h, w = image.shape[:2]
    out = []
    for y in range(0, h, tile):
        for x in range(0, w, tile):
            t = image[y : y + tile, x : x + tile]
            if t.shape[:2] != (tile, tile):  # edge tiles are padded by replicating the last pixels
                t = np.pad(t, ((0, tile - t.shape[0]), (0, tile - t.shape[1]), (0, 0)), mode="edge")
            out.append(np.ascontiguousarray(t))
    return out


def rgb_to_ycbcr(rgb: np.ndarray) -> np.ndarray:
    """JFIF RGB -> YCbCr, rounded (the forward counterpart of Aperio 33003's decoding)."""
    f = rgb.astype(np.float64)
    y = 0.299 * f[..., 0] + 0.587 * f[..., 1] + 0.114 * f[..., 2]
    cb = 128 - 0.168736 * f[..., 0] - 0.331264 * f[..., 1] + 0.5 * f[..., 2]
    cr = 128 + 0.5 * f[..., 0] - 0.418688 * f[..., 1] - 0.081312 * f[..., 2]
    return np.clip(np.rint(np.stack([y, cb, cr], -1)), 0, 255).astype(np.uint8)


def encode_tile(tile: np.ndarray, codec: str, quality: int) -> bytes:
    if codec == "jpeg-ycbcr":
        return _codecs().jpeg8_encode(tile, level=quality, colorspace="RGB", outcolorspace="YCbCr", subsampling="420")
    if codec == "jpeg-rgb":
        return _codecs().jpeg8_encode(tile, level=quality, colorspace="RGB", outcolorspace="RGB", subsampling="444")
    if codec == "j2k-ycbcr":  # Aperio 33003: Y, Cb, Cr components, no transform inside the codestream
        return _codecs().jpeg2k_encode(rgb_to_ycbcr(tile), level=40, codecformat="J2K", mct=False)
    if codec == "j2k-rgb":  # Aperio 33005: R, G, B components (OpenJPEG applies its own colour transform)
        return _codecs().jpeg2k_encode(tile, level=40, codecformat="J2K", mct=True)
    raise ValueError(codec)


def tiled_ifd(image: np.ndarray, tile: int, codec: str, quality: int, description: str,
              subfiletype: int = 0, extra: Sequence = ()) -> Ifd:
    h, w = image.shape[:2]
    chunks = [encode_tile(t, codec, quality) for t in _tiles(image, tile)]
    tags = [(254, LONG, subfiletype), (256, LONG, w), (257, LONG, h), (258, SHORT, [8, 8, 8]),
            (277, SHORT, 3), (284, SHORT, 1), (322, LONG, tile), (323, LONG, tile), (270, ASCII, description)]
    if codec.startswith("jpeg"):
        tables = None
        abbreviated = []
        for c in chunks:
            t, a = split_jpeg_tables(c)
            assert tables in (None, t), "tiles do not share tables"
            tables = t
            abbreviated.append(a)
        chunks = abbreviated
        tags += [(259, SHORT, 7), (347, UNDEFINED, tables)]
        if codec == "jpeg-ycbcr":
            tags += [(262, SHORT, 6), (530, SHORT, [2, 2])]
        else:
            tags += [(262, SHORT, 2)]
    else:
        tags += [(259, SHORT, 33003 if codec == "j2k-ycbcr" else 33005), (262, SHORT, 2)]
    return Ifd(tags + list(extra), chunks)


def stripped_ifd(image: np.ndarray, codec: str, description: str, subfiletype: int = 0,
                 rowsperstrip: int = 16, extra: Sequence = ()) -> Ifd:
    h, w = image.shape[:2]
    chunks = []
    for y in range(0, h, rowsperstrip):
        strip = np.ascontiguousarray(image[y : y + rowsperstrip])
        if codec == "jpeg":
            chunks.append(_codecs().jpeg8_encode(strip, level=90, colorspace="RGB", outcolorspace="YCbCr",
                                                   subsampling="444"))
        elif codec == "lzw":
            chunks.append(_codecs().lzw_encode(strip.tobytes()))
        else:
            raise ValueError(codec)
    tags = [(254, LONG, subfiletype), (256, LONG, w), (257, LONG, h), (258, SHORT, [8, 8, 8]), (277, SHORT, 3),
            (278, LONG, rowsperstrip), (284, SHORT, 1), (270, ASCII, description)]
    if codec == "jpeg":
        tags += [(259, SHORT, 7), (262, SHORT, 6), (530, SHORT, [1, 1])]
    else:
        tags += [(259, SHORT, 5), (262, SHORT, 2)]
    return Ifd(tags + list(extra), chunks, (273, 279))


APERIO_HEADER = "Aperio Image Library v12.0.15 \r\n"


def write_aperio(path, image: np.ndarray, *, codec: str = "jpeg-rgb", tile: int = 240, quality: int = 80,
                 downsamples: Sequence[int] = (4, 16), mpp: float = 0.499, app_mag: str = "20",
                 description_extra: str = "", zero_tiles: Sequence[int] = (), icc: bytes = b"") -> dict:
    """An Aperio-like SVS: level 0 (tiled), thumbnail (stripped JPEG), pyramid levels (tiled), then label
    (stripped LZW) and macro (stripped JPEG); `icc` is embedded in every directory (tag 34675).
    Returns {"levels": [...arrays], "associated": {...}}."""
    extra = [(34675, UNDEFINED, icc)] if icc else []
    h, w = image.shape[:2]
    fields = (f"|AppMag = {app_mag}|StripeWidth = 2040|ScanScope ID = SS1234|Filename = tw-test|Date = 11/30/26"
              f"|Time = 12:00:00|User = 00000000-1111-2222-3333-444444444444|MPP = {mpp}|Left = 25.691574"
              f"|Top = 23.449873|LineCameraSkew = -0.000424|Focus Offset = 0.000000{description_extra}")
    levels = [image]
    for ds in downsamples:
        levels.append(slidegen.pyramid(image, 1)[0][::ds, ::ds].copy())
    thumb = image[::16, ::16].copy()
    label = slidegen.tissue_image(200, 160, seed=99)
    macro = slidegen.tissue_image(400, 150, seed=98)
    codec_name = "JPEG/RGB" if codec == "jpeg-rgb" else "JPEG/YCC" if codec == "jpeg-ycbcr" else "J2K/YUV16"
    writer = ClassicTiffWriter()
    base = tiled_ifd(image, tile, codec, quality, f"{APERIO_HEADER}{w}x{h} [0,100 {w}x{h}] ({tile}x{tile}) "
                     f"{codec_name} Q={quality}{fields}", extra=extra)
    if zero_tiles:
        for t in zero_tiles:
            base.chunks[t] = b""
    writer.add(base)
    writer.add(stripped_ifd(thumb, "jpeg", f"{APERIO_HEADER}{w}x{h} -> {thumb.shape[1]}x{thumb.shape[0]} - {fields}",
                            extra=extra))
    for lv in levels[1:]:
        writer.add(tiled_ifd(lv, tile, codec, quality, f"{APERIO_HEADER}{w}x{h} -> {lv.shape[1]}x{lv.shape[0]} - "
                             f"({tile}x{tile}) {codec_name} Q={quality}{fields}", extra=extra))
    writer.add(stripped_ifd(label, "lzw", f"Aperio Image Library v12.0.15\r\nlabel {label.shape[1]}x{label.shape[0]}",
                            subfiletype=1, extra=extra))
    writer.add(stripped_ifd(macro, "jpeg", f"Aperio Image Library v12.0.15\r\nmacro {macro.shape[1]}x{macro.shape[0]}",
                            subfiletype=9, extra=extra))
    writer.write(path)
    return {"levels": levels, "associated": {"thumbnail": thumb, "label": label, "macro": macro}}


def _attr(name: str, value: str, pmsvr: str = "IString") -> str:
    return f'<Attribute Name="{name}" Group="0x0000" Element="0x0000" PMSVR="{pmsvr}">{value}</Attribute>'


def philips_xml(width: int, height: int, level_count: int, spacing_mm: float = 0.000227,
                label_jpeg: Optional[bytes] = None, macro_jpeg: Optional[bytes] = None) -> str:
    reps = "".join(
        '<DataObject ObjectType="PixelDataRepresentation">'
        + _attr("DICOM_PIXEL_SPACING", f'"{spacing_mm * 2 ** i:.6g}" "{spacing_mm * 2 ** i:.6g}"', "IDoubleArray")
        + _attr("PIIM_PIXEL_DATA_REPRESENTATION_NUMBER", str(i), "IUInt16")
        + _attr("PIIM_PIXEL_DATA_REPRESENTATION_COLUMNS", str(width >> i), "IUInt32")
        + _attr("PIIM_PIXEL_DATA_REPRESENTATION_ROWS", str(height >> i), "IUInt32")
        + "</DataObject>" for i in range(level_count))
    images = ('<DataObject ObjectType="DPScannedImage">'
              + _attr("DICOM_PIXEL_SPACING", f'"{spacing_mm:.6g}" "{spacing_mm:.6g}"', "IDoubleArray")
              + _attr("PIM_DP_IMAGE_TYPE", "WSI")
              + _attr("PIM_DP_IMAGE_COLUMNS", str(width), "IUInt32")
              + _attr("PIM_DP_IMAGE_ROWS", str(height), "IUInt32")
              + '<Attribute Name="PIIM_PIXEL_DATA_REPRESENTATION_SEQUENCE" Group="0x1001" Element="0x8b01" '
              + f'PMSVR="IDataObjectArray"><Array>{reps}</Array></Attribute>'
              + "</DataObject>")
    for kind, data in (("LABELIMAGE", label_jpeg), ("MACROIMAGE", macro_jpeg)):
        if data is not None:
            images += ('<DataObject ObjectType="DPScannedImage">' + _attr("PIM_DP_IMAGE_TYPE", kind)
                       + _attr("PIM_DP_IMAGE_DATA", base64.b64encode(data).decode(), "IString") + "</DataObject>")
    return ('<?xml version="1.0" encoding="UTF-8" ?>\n<DataObject ObjectType="DPUfsImport">'
            + _attr("DICOM_MANUFACTURER", "PHILIPS")
            + _attr("DICOM_SOFTWARE_VERSIONS", '"4.0.3"', "IStringArray")
            + _attr("DICOM_DERIVATION_DESCRIPTION",
                    'tiff-useBigTIFF=1-useRgb=0-levels=10002,10000,10001-processing=0-q80-sourceFilename="T-1-x"')
            + _attr("PIM_DP_UFS_BARCODE", base64.b64encode(b"TW-0001").decode())
            + '<Attribute Name="PIM_DP_SCANNED_IMAGES" Group="0x301D" Element="0x1003" PMSVR="IDataObjectArray">'
            + f"<Array>{images}</Array></Attribute></DataObject>")


def write_philips(path, image: np.ndarray, *, tile: int = 256, levels: int = 3, quality: int = 80,
                  label_in_xml: bool = True, sparse_tiles: Sequence[int] = ()) -> dict:
    """A Philips-like TIFF: tiled JPEG levels whose TIFF sizes are padded to whole tiles, XML metadata, a
    label image embedded in the XML (or as a stripped "Label" directory) and a stripped macro directory."""
    h, w = image.shape[:2]
    label = slidegen.tissue_image(160, 128, seed=7)
    macro = slidegen.tissue_image(320, 120, seed=8)
    label_jpeg = _codecs().jpeg8_encode(label, level=90)
    xml = philips_xml(w, h, levels, label_jpeg=label_jpeg if label_in_xml else None)
    arrays = slidegen.pyramid(image, levels)
    writer = ClassicTiffWriter()
    for i, lv in enumerate(arrays):
        lh, lw = lv.shape[:2]
        ph, pw = -(-lh // tile) * tile, -(-lw // tile) * tile
        padded = np.full((ph, pw, 3), 255, np.uint8)
        padded[:lh, :lw] = lv
        ifd = tiled_ifd(padded, tile, "jpeg-ycbcr", quality, xml if i == 0 else "level", subfiletype=0 if i == 0 else 1,
                        extra=[(305, ASCII, "Philips DP v1.0")] if i == 0 else [])
        if i == 0:
            for t in sparse_tiles:
                ifd.chunks[t] = b""
        writer.add(ifd)
    if not label_in_xml:
        writer.add(stripped_ifd(label, "jpeg", "Label", subfiletype=1))
    writer.add(stripped_ifd(macro, "jpeg", "Macro", subfiletype=1))
    writer.write(path)
    return {"levels": arrays, "associated": {"label": label, "macro": macro}}
