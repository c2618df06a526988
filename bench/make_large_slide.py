"""Writes the realistic large benchmark slide (40,960^2) on the GPU machine (what travels there is limited
to 64 MiB, so the slide is made where it is read): a 40,960 x 40,960 pyramidal TIFF of 256 x 256 JPEG tiles
(25,600 at level 0; levels 1-3 at 2x, 4x, 8x), quality 80, YCbCr 4:2:0 with shared JPEGTables as libvips
writes them, so that a random patch almost never meets a tile an earlier patch of the run decoded.

The texture is the 6,144^2 benchmark slide's (real IHC micrograph content), laid out in mirrored blocks with
a colour jitter per block, so the tiles compress like bench_ihc_6144.tif (bits per pixel printed for both).
Every tile is encoded on its own. Tiles are encoded with OpenCV (libjpeg-turbo) where it is installed, else
Pillow; the TIFF is written by tests/data/vendor_tiff.py's classic-TIFF writer (no imagecodecs needed).

    make_large_slide.py OUT.tif [--size 40960] [--source bench_ihc_6144.tif]"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "data"))
import slidegen  # noqa: E402
import vendor_tiff as vt  # noqa: E402

import tilewise  # noqa: E402

TILE = 256
QUALITY = 80


def encoder():
    try:
        import cv2

        params = [cv2.IMWRITE_JPEG_QUALITY, QUALITY]
        if hasattr(cv2, "IMWRITE_JPEG_SAMPLING_FACTOR"):  # 4:2:0 is also libjpeg's default for older OpenCV
            params += [cv2.IMWRITE_JPEG_SAMPLING_FACTOR, cv2.IMWRITE_JPEG_SAMPLING_FACTOR_420]
        return "OpenCV", lambda rgb: cv2.imencode(".jpg", np.ascontiguousarray(rgb[..., ::-1]), params)[1].tobytes()
    except ImportError:
        import io

        from PIL import Image

        def encode(rgb):
            buf = io.BytesIO()
            Image.fromarray(rgb).save(buf, "JPEG", quality=QUALITY, subsampling=2)
            return buf.getvalue()
        return "Pillow", encode


def texture(source: Path, size: int) -> np.ndarray:
    src = tilewise.open(source)
    w, h = src.dimensions
    return slidegen.mirrored_tiling(src.read_region((0, 0), (w, h)), size, size, seed=40)


def halve(image: np.ndarray) -> np.ndarray:
    try:
        import cv2

        return cv2.resize(image, (image.shape[1] // 2, image.shape[0] // 2), interpolation=cv2.INTER_AREA)
    except ImportError:
        return slidegen.pyramid(image, 2)[1]


def encoded_tiles(image: np.ndarray, encode, pool) -> tuple[bytes, list[bytes]]:
    h, w = image.shape[:2]

    def one(yx):
        y, x = yx
        t = image[y:y + TILE, x:x + TILE]
        if t.shape[:2] != (TILE, TILE):
            t = np.pad(t, ((0, TILE - t.shape[0]), (0, TILE - t.shape[1]), (0, 0)), mode="edge")
        return vt.split_jpeg_tables(encode(t))

    parts = list(pool.map(one, [(y, x) for y in range(0, h, TILE) for x in range(0, w, TILE)], chunksize=64))
    tables = parts[0][0]
    assert all(p[0] == tables for p in parts), "tiles do not share tables"
    return tables, [p[1] for p in parts]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--size", type=int, default=40960)
    ap.add_argument("--levels", type=int, default=4)
    ap.add_argument("--source", type=Path,
                    default=Path(os.environ.get("TILEWISE_GPU_DATA", ".gpu/data")) / "bench_ihc_6144.tif")
    args = ap.parse_args()
    start = time.perf_counter()
    name, encode = encoder()
    image = texture(args.source, args.size)
    writer = vt.ClassicTiffWriter()  # tifffile would want imagecodecs even for encoded tiles
    with ThreadPoolExecutor(os.cpu_count()) as pool:
        for level in range(args.levels):
            if level:
                image = halve(image)
            tables, tiles = encoded_tiles(image, encode, pool)
            h, w = image.shape[:2]
            tags = [(254, vt.LONG, 1 if level else 0), (256, vt.LONG, w), (257, vt.LONG, h),
                    (258, vt.SHORT, [8, 8, 8]), (259, vt.SHORT, 7), (262, vt.SHORT, 6), (277, vt.SHORT, 3),
                    (284, vt.SHORT, 1), (322, vt.LONG, TILE), (323, vt.LONG, TILE), (347, vt.UNDEFINED, tables),
                    (530, vt.SHORT, [2, 2])]
            if level == 0:  # 0.25 um/pixel: 40,000 pixels per cm
                tags += [(282, vt.RATIONAL, [(40000, 1)]), (283, vt.RATIONAL, [(40000, 1)]), (296, vt.SHORT, 3)]
            writer.add(vt.Ifd(tags, tiles))
    writer.write(args.out)
    print(f"{args.out}: {args.size}x{args.size}, {((args.size + TILE - 1) // TILE) ** 2} level-0 tiles, "
          f"{args.levels} levels, {args.out.stat().st_size / 2**20:.0f} MiB, tiles by {name}, "
          f"{time.perf_counter() - start:.0f} s; bits/pixel {slidegen.bits_per_pixel(args.out):.2f} "
          f"(source {slidegen.bits_per_pixel(args.source):.2f})", flush=True)


if __name__ == "__main__":
    main()
