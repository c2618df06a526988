"""A writer of 3DHISTECH MIRAX slides (`name.mrxs` + folder `name/` with Slidedat.ini, Index.dat and data
files), laid out as OpenSlide 4.0.1 reads them, for testing against it.

The slide is a grid of camera photos taken from a ground-truth `world` image: photo (i, j) sits at its
camera position (the nominal grid of photo size minus `overlap`, plus `jitter`), each photo split into
`divisions` x `divisions` stored images of `tile` x `tile` pixels. Each photo is tinted by a few levels of
its own (`tint`), so that where photos overlap the pixels tell which one shows. Zoom level k stores, for
each 2^k x 2^k block of level-0 images, their concatenation downsampled by 2^k (a box filter), as the
scanner does. Positions are multiples of the largest concat factor, so every tile lands on whole pixels
at every level. `absent` photos have no images at level 0 (OpenSlide then leaves them out of every level).
"""

from __future__ import annotations

import io
import struct
import zlib
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np
from PIL import Image

SLIDE_ID = "6c8f2a1e-tilewise-mirax-0001"


def encode(image: np.ndarray, fmt: str, quality: int = 90) -> bytes:
    buf = io.BytesIO()
    pil = Image.fromarray(image)
    if fmt == "JPEG":
        pil.save(buf, "JPEG", quality=quality, subsampling=0)
    elif fmt == "PNG":
        pil.save(buf, "PNG")
    elif fmt == "BMP24":
        pil.save(buf, "BMP")
    else:
        raise ValueError(fmt)
    return buf.getvalue()


def _box_down(image: np.ndarray, f: int) -> np.ndarray:
    h, w = image.shape[:2]
    return image.reshape(h // f, f, w // f, f, 3).mean(axis=(1, 3)).round().astype(np.uint8)


class _Data:
    """Data files: blobs appended round-robin over `count` files, each after a small header."""

    def __init__(self, folder: Path, count: int):
        self.names = [f"Data{i:04d}.dat" for i in range(count)]
        self.blobs: List[bytearray] = [bytearray(b"tilewise-mirax-data" + bytes(13)) for _ in range(count)]
        self.next = 0
        self.folder = folder

    def add(self, data: bytes, file: Optional[int] = None) -> Tuple[int, int, int]:
        f = self.next % len(self.blobs) if file is None else file
        self.next += 1
        at = len(self.blobs[f])
        self.blobs[f] += data
        return at, len(data), f

    def write(self) -> None:
        for name, blob in zip(self.names, self.blobs):
            (self.folder / name).write_bytes(bytes(blob))


def write_mirax(path, world: np.ndarray, *, tile: int = 256, divisions: int = 2, overlap: Tuple[int, int] = (32, 24),
                levels: int = 4, fmt: str = "JPEG", positions: Optional[str] = "vimslide", jitter: int = 2,
                absent: Iterable[Tuple[int, int]] = (), tint: int = 3, fill_bgr: int = 0xFFFFFF, data_files: int = 2,
                associated: Sequence[str] = ("macro", "label", "thumbnail"), page_size: int = 7,
                extra_general: Optional[Dict[str, str]] = None, seed: int = 0) -> Path:
    """Writes the slide; returns the .mrxs path. `positions`: "vimslide" (raw VIMSLIDE_POSITION_BUFFER),
    "stitching" (zlib StitchingIntensityLayer) or None (OpenSlide derives them from the overlap)."""
    path = Path(path)
    folder = path.with_suffix("")
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    step = 1 << (levels - 1)  # positions are multiples of the largest concat factor
    photo = tile * divisions
    ox, oy = overlap
    wh, ww = world.shape[:2]
    across = max(1, (ww - ox) // (photo - ox)) if positions else max(1, (ww - ox) // (photo - ox))
    down = max(1, (wh - oy) // (photo - oy))
    images_x, images_y = across * divisions, down * divisions
    absent = set(absent)
    pos: Dict[Tuple[int, int], Tuple[int, int]] = {}
    for j in range(down):
        for i in range(across):
            x = i * (photo - ox)
            y = j * (photo - oy)
            if positions:
                x += int(rng.integers(0, jitter + 1)) * step
                y += int(rng.integers(0, jitter + 1)) * step
                x, y = min(x, ww - photo) // step * step, min(y, wh - photo) // step * step
            pos[(i, j)] = (x, y)

    # Level-0 images: photo (i, j)'s part (xx % d, yy % d), tinted by the photo.
    level0: Dict[Tuple[int, int], np.ndarray] = {}
    for (i, j), (x, y) in pos.items():
        if (i, j) in absent:
            continue
        shade = int(((i * 7 + j * 3) % 5 - 2) * tint)
        shot = np.clip(world[y:y + photo, x:x + photo].astype(np.int16) + shade, 0, 255).astype(np.uint8)
        for b in range(divisions):
            for a in range(divisions):
                level0[(i * divisions + a, j * divisions + b)] = shot[b * tile:(b + 1) * tile, a * tile:(a + 1) * tile]

    fill_rgb = np.array([fill_bgr & 0xFF, (fill_bgr >> 8) & 0xFF, (fill_bgr >> 16) & 0xFF], np.uint8)
    data = _Data(folder, data_files)
    zoom_entries: List[List[Tuple[int, int, int, int]]] = []
    for k in range(levels):
        f = 1 << k
        entries = []
        for y in range(0, images_y, f):
            for x in range(0, images_x, f):
                block = [(x + a, y + b) for b in range(f) for a in range(f)]
                if not any(c in level0 for c in block):
                    continue
                canvas = np.empty((tile * f, tile * f, 3), np.uint8)
                canvas[:] = fill_rgb
                for (cx, cy) in block:
                    if (cx, cy) in level0:
                        canvas[(cy - y) * tile:(cy - y + 1) * tile, (cx - x) * tile:(cx - x + 1) * tile] = level0[(cx, cy)]
                img = _box_down(canvas, f) if f > 1 else canvas
                off, length, fileno = data.add(encode(np.ascontiguousarray(img), fmt))
                entries.append((y * images_x + x, off, length, fileno))
        zoom_entries.append(entries)

    # Non-hierarchical records: the associated images (Scan data layer), then the positions.
    nonhier_names: List[Tuple[str, List[Tuple[str, str]]]] = []
    nonhier_extents: List[Tuple[int, int, int]] = []
    sections: Dict[str, Dict[str, str]] = {}
    kinds = {"macro": ("ScanDataLayer_SlideThumbnail", "THUMBNAIL_IMAGE_TYPE", (300, 900)),
             "label": ("ScanDataLayer_SlideBarcode", "BARCODE_IMAGE_TYPE", (300, 280)),
             "thumbnail": ("ScanDataLayer_SlidePreview", "PREVIEW_IMAGE_TYPE", (200, 500))}
    if associated:
        vals = []
        for n, name in enumerate(associated):
            value, key, (h, w) = kinds[name]
            section = f"NONHIERLAYER_0_LEVEL_{n}_SECTION"
            vals.append((value, section))
            sections[section] = {key: "JPEG"}
            img = np.zeros((h, w, 3), np.uint8)
            img[..., n % 3] = 200
            img[h // 4:h // 2, w // 4:w // 2] = (30 * n, 90, 160)
            nonhier_extents.append(data.add(encode(img, "JPEG")))
        nonhier_names.append(("Scan data layer", vals))
    if positions:
        buf = b"".join(struct.pack("<Bii", 1, *pos[(i, j)]) if (i, j) not in absent else struct.pack("<Bii", 0, 0, 0)
                       for j in range(down) for i in range(across))
        name = "VIMSLIDE_POSITION_BUFFER" if positions == "vimslide" else "StitchingIntensityLayer"
        if positions == "stitching":
            buf = zlib.compress(buf)
        section = f"NONHIERLAYER_{len(nonhier_names)}_LEVEL_0_SECTION"
        sections[section] = {"VIMSLIDE_POSITION_DATA_FORMAT_VERSION": "257"}
        nonhier_names.append((name, [("default", section)]))
        nonhier_extents.append(data.add(buf))

    # Index.dat.
    head = b"01.02" + SLIDE_ID.encode()
    body = bytearray(head + bytes(8))
    hier_table = len(body)
    body += bytes(4 * levels)
    nonhier_table = len(body)
    body += bytes(4 * len(nonhier_extents))
    struct.pack_into("<ii", body, len(head), hier_table, nonhier_table)
    for k, entries in enumerate(zoom_entries):
        record = len(body)
        body += struct.pack("<ii", 0, 0)
        struct.pack_into("<i", body, hier_table + 4 * k, record)
        pages = [entries[i:i + page_size] for i in range(0, len(entries), page_size)] or [[]]
        prev_next = record + 4
        for page in pages:
            at = len(body)
            struct.pack_into("<i", body, prev_next, at)
            body += struct.pack("<ii", len(page), 0)
            for e in page:
                body += struct.pack("<iiii", *e)
            prev_next = at + 4
        struct.pack_into("<i", body, prev_next, 0)
        # the first pointer written into the record is the page chain's start
    for n, (off, length, fileno) in enumerate(nonhier_extents):
        record = len(body)
        struct.pack_into("<i", body, nonhier_table + 4 * n, record)
        body += struct.pack("<ii", 0, record + 8)
        body += struct.pack("<iiiiiii", 1, 0, 0, 0, off, length, fileno)
    (folder / "Index.dat").write_bytes(bytes(body))
    data.write()

    # Slidedat.ini.
    general = {"SLIDE_VERSION": "01.03", "SLIDE_ID": SLIDE_ID, "IMAGENUMBER_X": str(images_x),
               "IMAGENUMBER_Y": str(images_y), "OBJECTIVE_MAGNIFICATION": "20",
               "CameraImageDivisionsPerSide": str(divisions), "SLIDE_NAME": "tilewise test"}
    general.update(extra_general or {})
    hier = {"HIER_COUNT": "1", "HIER_0_NAME": "Slide zoom level", "HIER_0_COUNT": str(levels)}
    for k in range(levels):
        hier[f"HIER_0_VAL_{k}"] = f"ZoomLevel_{k}"
        hier[f"HIER_0_VAL_{k}_SECTION"] = f"LAYER_0_LEVEL_{k}_SECTION"
    hier["NONHIER_COUNT"] = str(len(nonhier_names))
    for n, (name, vals) in enumerate(nonhier_names):
        hier[f"NONHIER_{n}_NAME"] = name
        hier[f"NONHIER_{n}_COUNT"] = str(len(vals))
        for v, (value, section) in enumerate(vals):
            hier[f"NONHIER_{n}_VAL_{v}"] = value
            hier[f"NONHIER_{n}_VAL_{v}_SECTION"] = section
    hier["INDEXFILE"] = "Index.dat"
    groups: Dict[str, Dict[str, str]] = {"GENERAL": general, "HIERARCHICAL": hier,
                                         "DATAFILE": {"FILE_COUNT": str(data_files),
                                                      **{f"FILE_{i}": n for i, n in enumerate(data.names)}}}
    for k in range(levels):
        groups[f"LAYER_0_LEVEL_{k}_SECTION"] = {
            "OVERLAP_X": str(ox / (1 << k)) if k else str(ox), "OVERLAP_Y": str(oy / (1 << k)) if k else str(oy),
            "MICROMETER_PER_PIXEL_X": repr(0.2425 * (1 << k)), "MICROMETER_PER_PIXEL_Y": repr(0.2431 * (1 << k)),
            "IMAGE_FORMAT": fmt, "IMAGE_FILL_COLOR_BGR": str(fill_bgr), "DIGITIZER_WIDTH": str(tile),
            "DIGITIZER_HEIGHT": str(tile), "IMAGE_CONCAT_FACTOR": "0" if k == 0 else "1"}
    groups.update(sections)
    text = "".join(f"[{g}]\r\n" + "".join(f"{k} = {v}\r\n" for k, v in kv.items()) for g, kv in groups.items())
    (folder / "Slidedat.ini").write_bytes(b"\xef\xbb\xbf" + text.encode())
    path.write_bytes(b"")  # OpenSlide reads only the folder; tilewise opens an empty .mrxs too
    return path
