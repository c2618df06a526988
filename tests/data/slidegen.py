"""Deterministic slide generators for tests, benchmarks and the demo.

- :func:`tissue_image` paints procedural tissue-like texture (white background, pink eosin stroma with
  fibres, purple hematoxylin nuclei), so JPEG tiles compress like real scans rather than like flat colours.
- :func:`ihc_tissue` tiles, mirrors and colour-jitters the real micrograph ``shared/testdata/ihc.png``
  (FileNotFoundError without it: it never substitutes another texture).
- :func:`write_tifffile_pyramid` writes generic pyramidal TIFFs with tifffile (multi-page or SubIFD pyramids,
  tiled or stripped, any compression tifffile + imagecodecs support).
- :func:`write_vips_pyramid` writes pyramids with libvips (``vips tiffsave``), an independent writer whose
  JPEG tiles use shared JPEGTables, as scanners' files do.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Iterable, Optional, Sequence

import numpy as np

REPO = Path(__file__).resolve().parents[2]
SHARED_TESTDATA = REPO.parent / "shared" / "testdata"


def _smooth_noise(h: int, w: int, scale: int, rng: np.random.Generator) -> np.ndarray:
    """Bilinearly interpolated random grid: values in [0, 1), features about `scale` pixels wide."""
    gh, gw = h // scale + 2, w // scale + 2
    grid = rng.random((gh, gw), dtype=np.float32)
    ys = np.arange(h, dtype=np.float32) / scale
    xs = np.arange(w, dtype=np.float32) / scale
    y0 = ys.astype(np.int32)
    x0 = xs.astype(np.int32)
    fy = (ys - y0)[:, None]
    fx = (xs - x0)[None, :]
    a = grid[y0][:, x0]
    b = grid[y0][:, x0 + 1]
    c = grid[y0 + 1][:, x0]
    d = grid[y0 + 1][:, x0 + 1]
    return (a * (1 - fx) + b * fx) * (1 - fy) + (c * (1 - fx) + d * fx) * fy


def tissue_image(width: int, height: int, seed: int = 0) -> np.ndarray:
    """A (height, width, 3) uint8 image of procedural H&E-like tissue on a white background."""
    rng = np.random.default_rng(seed)
    h, w = height, width
    big = max(64, min(h, w) // 4)
    mask_field = 0.65 * _smooth_noise(h, w, big, rng) + 0.35 * _smooth_noise(h, w, max(16, big // 4), rng)
    tissue = mask_field > 0.45
    # Stroma: eosin pink with fibrous streaks (anisotropic noise).
    fibres = _smooth_noise(h, w * 4, 24, rng)[:, ::4] * 0.6 + _smooth_noise(h, w, 6, rng) * 0.4
    stroma = np.empty((h, w, 3), np.float32)
    stroma[..., 0] = 235 - 40 * fibres
    stroma[..., 1] = 160 - 70 * fibres
    stroma[..., 2] = 200 - 45 * fibres
    img = np.where(tissue[..., None], stroma, np.float32(242))
    # Nuclei: dark purple ellipses, denser in some areas.
    density = _smooth_noise(h, w, max(32, big // 2), rng)
    n = int(h * w / 350)
    ys = rng.integers(0, h, n)
    xs = rng.integers(0, w, n)
    keep = tissue[ys, xs] & (rng.random(n) < density[ys, xs] * 1.4)
    ys, xs = ys[keep], xs[keep]
    radii = rng.uniform(3.0, 8.0, len(ys))
    stretch = rng.uniform(0.6, 1.0, len(ys))
    angle = rng.uniform(0, np.pi, len(ys))
    shade = rng.uniform(0.75, 1.1, len(ys))
    for y, x, r, s, t, k in zip(ys, xs, radii, stretch, angle, shade):
        ri = int(r) + 1
        y0, y1, x0, x1 = max(0, y - ri), min(h, y + ri + 1), max(0, x - ri), min(w, x + ri + 1)
        yy, xx = np.mgrid[y0:y1, x0:x1]
        dy, dx = yy - y, xx - x
        u = (dx * np.cos(t) + dy * np.sin(t)) / r
        v = (-dx * np.sin(t) + dy * np.cos(t)) / (r * s)
        inside = (u * u + v * v) <= 1.0
        patch = img[y0:y1, x0:x1]
        patch[inside] = np.array([95, 55, 150], np.float32) * k
    img += rng.normal(0, 5, img.shape).astype(np.float32)
    return np.clip(img, 0, 255).astype(np.uint8)


def ihc_tissue(width: int, height: int, seed: int = 0) -> np.ndarray:
    """Real tissue texture: ihc.png tiled with mirroring and per-tile colour jitter. FileNotFoundError when the
    micrograph is absent: benchmark slides made of another texture would measure other rates."""
    src_path = SHARED_TESTDATA / "ihc.png"
    if not src_path.exists():
        raise FileNotFoundError(f"{src_path}: the benchmark slides' source texture is missing (tissue_image() makes "
                                "a procedural one, under its own name)")
    from PIL import Image

    return mirrored_tiling(np.asarray(Image.open(src_path).convert("RGB")), width, height, seed)


def mirrored_tiling(src: np.ndarray, width: int, height: int, seed: int = 0) -> np.ndarray:
    """`src` (h, w, 3) tiled over width x height, each block one of its four mirror images, with a colour
    jitter of +-12 per block (bench/make_large_slide.py tiles the benchmark slide's pixels this way)."""
    rng = np.random.default_rng(seed)
    th, tw = src.shape[:2]
    out = np.empty((height, width, 3), np.uint8)
    variants = [src, src[:, ::-1], src[::-1], src[::-1, ::-1]]
    for ty in range(0, height, th):
        for tx in range(0, width, tw):
            hh, ww = min(th, height - ty), min(tw, width - tx)
            tile = variants[int(rng.integers(0, 4))][:hh, :ww].astype(np.int16)
            tile = tile + rng.integers(-12, 13, 3).astype(np.int16)
            out[ty : ty + hh, tx : tx + ww] = np.clip(tile, 0, 255).astype(np.uint8)
    return out


def pyramid(image: np.ndarray, levels: int) -> list[np.ndarray]:
    """Level k is level k-1 halved by 2x2 box averaging (odd edges dropped, as libvips does), in the image's
    unsigned integer type."""
    out = [image]
    for _ in range(1, levels):
        prev = out[-1].astype(np.uint64)
        h, w = prev.shape[0] // 2, prev.shape[1] // 2
        if h < 1 or w < 1:
            break
        p = prev[: h * 2, : w * 2]
        out.append(((p[0::2, 0::2] + p[1::2, 0::2] + p[0::2, 1::2] + p[1::2, 1::2] + 2) // 4).astype(image.dtype))
    return out


def write_tifffile_pyramid(
    path: "str | os.PathLike[str]",
    image: np.ndarray,
    *,
    levels: int = 3,
    compression: Optional[str] = "jpeg",
    tile: Optional[Sequence[int]] = (256, 256),
    rowsperstrip: Optional[int] = None,
    photometric: Optional[str] = None,
    predictor: Optional[bool] = None,
    quality: int = 80,
    subifds: bool = False,
    bigtiff: bool = False,
    byteorder: str = "<",
    description: Optional[str] = None,
    mpp: Optional[float] = 0.25,
) -> list[np.ndarray]:
    """Writes a generic pyramid with tifffile and returns the level arrays written.

    ``tile`` is (height, width) as tifffile takes it; ``tile=None`` writes strips of ``rowsperstrip`` rows.
    """
    import tifffile

    images = pyramid(image, levels)
    if photometric is None:
        photometric = "rgb" if image.ndim == 3 and image.shape[2] >= 3 else "minisblack"
    kwargs = dict(photometric=photometric, compression=compression)
    if compression == "jpeg":
        kwargs["compressionargs"] = {"level": quality}
    if predictor:
        kwargs["predictor"] = True
    if tile is not None:
        kwargs["tile"] = tuple(tile)
    elif rowsperstrip is not None:
        kwargs["rowsperstrip"] = rowsperstrip
    if image.ndim == 3 and image.shape[2] == 4:
        kwargs["extrasamples"] = ["unassalpha"]
    with tifffile.TiffWriter(path, bigtiff=bigtiff, byteorder=byteorder) as tw:
        extra = {}
        if mpp:
            extra = dict(resolution=(1e4 / mpp, 1e4 / mpp), resolutionunit="CENTIMETER")
        tw.write(images[0], subifds=len(images) - 1 if subifds else 0, description=description,
                 metadata=None, **extra, **kwargs)
        for level in images[1:]:
            tw.write(level, subfiletype=1, metadata=None, **kwargs)
    return images


def write_vips_pyramid(
    path: "str | os.PathLike[str]",
    image: np.ndarray,
    *,
    compression: str = "jpeg",
    tile: int = 256,
    quality: int = 80,
    mpp: Optional[float] = 0.25,
    extra_args: Iterable[str] = (),
) -> None:
    """Writes a pyramidal tiled TIFF with libvips (`vips tiffsave --tile --pyramid`)."""
    import tifffile

    vips = shutil.which("vips")
    if vips is None:
        raise RuntimeError("libvips (the `vips` command) is not installed")
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "src.tif")
        tifffile.imwrite(src, image, photometric="rgb" if image.shape[2] >= 3 else "minisblack", metadata=None)
        args = [vips, "tiffsave", src, os.fspath(path), "--tile", "--pyramid", f"--tile-width={tile}",
                f"--tile-height={tile}", f"--compression={compression}"]
        if compression == "jpeg":
            args.append(f"--Q={quality}")
        if mpp:
            # vips resolutions are pixels per millimetre; written as pixels per centimetre.
            args += [f"--xres={1e3 / mpp}", f"--yres={1e3 / mpp}", "--resunit=cm"]
        subprocess.run(args + list(extra_args), check=True, capture_output=True)


def bits_per_pixel(path: "str | os.PathLike[str]", level: int = 0) -> float:
    """Compressed bits per pixel of one level (tile bytes over pixels)."""
    import tifffile

    with tifffile.TiffFile(path) as tf:
        page = tf.pages[level]
        return 8.0 * sum(page.databytecounts) / (page.imagewidth * page.imagelength)


def write_damaged_slide(path) -> Path:
    """A 600 x 500 deflate slide of 128-pixel tiles (tissue_image seed 2) whose tile (0, 1) is garbage: the
    source of the converters' damaged-tile tests."""
    import tifffile

    path = Path(path)
    write_tifffile_pyramid(path, tissue_image(600, 500, seed=2), levels=1, compression="zlib", tile=(128, 128))
    with tifffile.TiffFile(path) as tf:
        offset, count = tf.pages[0].dataoffsets[5], tf.pages[0].databytecounts[5]
    data = bytearray(path.read_bytes())
    data[offset:offset + count] = bytes(range(256)) * (count // 256) + bytes(count % 256)
    path.write_bytes(bytes(data))
    return path
