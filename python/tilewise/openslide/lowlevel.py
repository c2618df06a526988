"""openslide-python's ``openslide.lowlevel`` over tilewise: the exceptions, and the C-style functions on slide
handles that ``OpenSlide`` is built on (as in openslide-python, where they wrap libopenslide through ctypes).

Every function has ``available = True`` (code and tests guard optional OpenSlide features with
``lowlevel.<function>.available``). Handles behave as OpenSlide's: a closed handle raises
``ctypes.ArgumentError`` (openslide-python's argument converter refuses it), and a handle that failed a read
stays in error - every later call raises that error again (OpenSlide's sticky errors). Arguments of the wrong
type raise ``ArgumentError`` too, as ctypes does.
"""

from __future__ import annotations

import os as _os
from ctypes import ArgumentError
from typing import Any as _Any, Callable as _Callable, List as _List, Optional as _Optional, Tuple as _Tuple

import numpy as _np
from PIL import Image as _PILImage

import tilewise as _tilewise
from .. import _core
from ..errors import TilewiseError as _TilewiseError


class OpenSlideError(Exception):
    """An error reading a slide (OpenSlide's error string is the message)."""


class OpenSlideUnsupportedFormatError(OpenSlideError):
    """The file is missing or is not a slide format."""


class OpenSlideVersionError(OpenSlideError):
    """A feature needs a newer OpenSlide; tilewise has every feature, so it is never raised."""


def _exported(fn: _Callable) -> _Callable:
    fn.available = True  # type: ignore[attr-defined]
    return fn


def _filename(name: _Any) -> str:
    """openslide-python's filename converter: str, bytes or os.PathLike, else ArgumentError."""
    if isinstance(name, bytes):
        return _os.fsdecode(name)
    if isinstance(name, (str, _os.PathLike)):
        return _os.fspath(name)
    raise ArgumentError(f"argument 1: TypeError: expected str, bytes or os.PathLike object, not {type(name).__name__}")


class _OpenSlide:
    """A slide handle: the open tilewise slide, or None once closed; the sticky error of a failed read."""

    def __init__(self, slide: "_tilewise.Slide"):
        self._slide: _Optional[_tilewise.Slide] = slide
        self._error: _Optional[str] = None

    def checked(self) -> "_tilewise.Slide":
        if self._slide is None:
            raise ArgumentError("argument 1: ValueError: Passing closed slide object")
        if self._error is not None:
            raise OpenSlideError(self._error)
        return self._slide

    def fail(self, error: Exception) -> OpenSlideError:
        self._error = str(error)
        return OpenSlideError(self._error)


class _OpenSlideCache:
    """A cache handle: tilewise has one process-wide tile cache; attaching a cache sets its byte budget."""

    def __init__(self, capacity: int):
        self.capacity = capacity


def _checked(slide: _Any) -> "_tilewise.Slide":
    if not isinstance(slide, _OpenSlide):
        raise ArgumentError("argument 1: TypeError: Not an OpenSlide reference")
    return slide.checked()


# Formats OpenSlide reads only when the first directory is tiled ("TIFF is not tiled"); tilewise reads
# stripped ones too, and OpenSlide reads OME-TIFF as a generic TIFF.
_TILED_ONLY = ("generic-tiff", "ome-tiff")


# Formats OpenSlide 4.0.1 has no driver for: a cellSens .vsi's pyramid is in .ets files it does not read (it
# sees the .vsi as a TIFF of previews, whose first directory is stripped).
_NOT_OPENSLIDE = ("olympus",)


def _openslide_refuses(slide: "_tilewise.Slide") -> bool:
    """True for a slide tilewise opens but OpenSlide does not (clients then fall back, e.g. to ImageSlide)."""
    return slide.format in _NOT_OPENSLIDE or (slide.format in _TILED_ONLY and not slide.is_tiled(0))


@_exported
def detect_vendor(filename: _Any) -> _Optional[str]:
    path = _filename(filename)
    vendor = _core.detect_format(path)
    if vendor in _NOT_OPENSLIDE:
        return None
    if vendor in _TILED_ONLY:
        try:
            return None if _openslide_refuses(_tilewise.Slide(path)) else vendor
        except _TilewiseError:
            return vendor  # recognised, but damaged: open() reports it
    return vendor


@_exported
def open(filename: _Any) -> _OpenSlide:  # noqa: A001 - openslide-python's name
    path = _filename(filename)
    if _core.detect_format(path) in (None, *_NOT_OPENSLIDE):
        raise OpenSlideUnsupportedFormatError("Unsupported or missing image file")
    try:
        slide = _tilewise.Slide(path)
    except _TilewiseError as e:
        raise OpenSlideError(str(e)) from None
    if _openslide_refuses(slide):
        raise OpenSlideUnsupportedFormatError("Unsupported or missing image file")
    refusal = _zeiss_refusal(slide) or _dicom_refusal(slide, path) or _leica_refusal(slide)
    if refusal:
        slide.close()
        raise OpenSlideError(refusal)
    return _OpenSlide(slide)


def _dicom_refusal(slide: "_tilewise.Slide", path: str) -> _Optional[str]:
    """OpenSlide 4.0.1's error for a DICOM series that is not one RGB focal plane (tilewise reads grey samples
    and focal planes): the attributes it checks, in its order."""
    if slide.format != "dicom" or slide.is_rgb:
        return None
    props = slide.properties
    if "dicom.PlanarConfiguration" not in props:
        return f"Reading {path}: Couldn't read PlanarConfiguration"
    for name, want in (("BitsAllocated", "8"), ("SamplesPerPixel", "3"), ("TotalPixelMatrixFocalPlanes", "1")):
        have = props.get(f"dicom.{name}")
        if have is not None and have != want:
            return f"Reading {path}: Attribute {name} value {have} != {want}"
    return None


def _leica_refusal(slide: "_tilewise.Slide") -> _Optional[str]:
    """OpenSlide 4.0.1's error for a Leica SCN without a brightfield main image (tilewise then reads its
    fluorescence image)."""
    return "Can't find main image" if slide.format == "leica" and not slide.is_rgb else None


_CZI_PIXEL_TYPES = {"uint8": "GRAY8", "uint16": "GRAY16", "float32": "GRAY32FLOAT"}


def _zeiss_refusal(slide: "_tilewise.Slide") -> _Optional[str]:
    """OpenSlide 4.0.1's error for a Zeiss CZI that is not one brightfield image (tilewise reads its planes):
    a Z or T subblock dimension, then a channel other than 0, then a grey pixel type, as it checks them."""
    if slide.format != "zeiss":
        return None
    t, c, z = slide.shape(0)[:3]
    if z > 1:
        return 'Unrecognized subblock dimension "Z"'
    if t > 1:
        return 'Unrecognized subblock dimension "T"'
    if slide.is_rgb:
        return None
    if c > 1:
        return "Nonzero subblock channel 1"
    return f"Pixel type {_CZI_PIXEL_TYPES.get(slide.dtype.name, slide.dtype.name)} is not supported"


@_exported
def close(slide: _OpenSlide) -> None:
    if not isinstance(slide, _OpenSlide):
        raise ArgumentError("argument 1: TypeError: Not an OpenSlide reference")
    if slide._slide is None:
        raise ArgumentError("argument 1: ValueError: Passing closed slide object")
    slide._slide = None


@_exported
def get_level_count(slide: _OpenSlide) -> int:
    return _checked(slide).level_count


@_exported
def get_level_dimensions(slide: _OpenSlide, level: int) -> _Tuple[int, int]:
    levels = _checked(slide).levels
    return levels[level].dimensions if 0 <= level < len(levels) else (-1, -1)


@_exported
def get_level_downsample(slide: _OpenSlide, level: int) -> float:
    levels = _checked(slide).levels
    return levels[level].downsample if 0 <= level < len(levels) else -1.0


@_exported
def get_best_level_for_downsample(slide: _OpenSlide, downsample: float) -> int:
    return _checked(slide).best_level_for_downsample(float(downsample))


@_exported
def read_region(slide: _OpenSlide, x: int, y: int, level: int, w: int, h: int) -> _PILImage.Image:
    """An RGBA image of w x h pixels of `level` at level-0 (x, y): transparent outside the slide and for a level
    that does not exist, not premultiplied."""
    s = _checked(slide)
    if w < 0 or h < 0:
        raise OpenSlideError(f"negative width ({w}) or negative height ({h}) not allowed")
    rgba = _np.zeros((h, w, 4), _np.uint8)
    if w and h and 0 <= level < s.level_count:
        ds = s.levels[level].downsample
        (ix, qx, tx), (iy, qy, ty) = _place(x, ds), _place(y, ds)
        try:
            if tx < w and ty < h:
                rgba[ty:, tx:] = _read_placed(s, level, ix, iy, qx, qy, w - tx, h - ty)
        except _TilewiseError as e:
            raise slide.fail(e) from None
    return _PILImage.fromarray(rgba, "RGBA")


def _place(c: int, ds: float) -> _Tuple[int, int, int]:
    """Where OpenSlide puts a level-0 coordinate of a region on `ds`'s level, for one axis: (the first level
    pixel, the 7-bit fraction of a pixel past it that cairo/pixman interpolates by, the output offset at which
    that pixel lands). A negative coordinate is cut off whole (OpenSlide translates by (-c) / ds truncated and
    paints from the level's pixel 0); each axis is placed on its own, so the other axis keeps its fraction."""
    if c < 0:
        return 0, 0, int(-c / ds)
    f = c / ds
    i = int(_np.floor(f))
    q = int(round((f - i) * 128))
    return (i + 1, 0, 0) if q == 128 else (i, q, 0)


def _premultiplied(s: "_tilewise.Slide", level: int, ix: int, iy: int, w: int, h: int) -> _np.ndarray:
    """The level's w x h pixels from (ix, iy) as OpenSlide holds them: premultiplied RGBA (int64), transparent
    where the file stores nothing (outside the level, tiles it does not store, the gaps between MIRAX tiles).
    A level with an alpha sample keeps it; unassociated alpha is premultiplied as libtiff's RGBA reader does
    it ((v * a + 127) / 255)."""
    rgba = _np.zeros((h, w, 4), _np.int64)
    rgba[..., :3] = s.read_level_region((ix, iy), (w, h), level=level, fill=(0, 0, 0), c="rgb")
    info = s._slide.levels[level]
    if info.alpha_sample < 0:
        for x, y, rw, rh in s._slide.stored_area(level, ix, iy, w, h):
            rgba[y - iy:y - iy + rh, x - ix:x - ix + rw, 3] = 255
        return rgba
    alpha = s._slide.read_level_alpha(level, ix, iy, w, h).astype(_np.int64)
    rgba[..., 3] = alpha
    if not info.alpha_associated:
        rgba[..., :3] = (rgba[..., :3] * alpha[..., None] + 127) // 255
    return rgba


def _read_placed(s: "_tilewise.Slide", level: int, ix: int, iy: int, qx: int, qy: int, w: int,
                 h: int) -> _np.ndarray:
    """OpenSlide's w x h RGBA pixels of the level from pixel (ix, iy) moved on by (qx, qy) / 128 of a pixel,
    as openslide-python returns them (un-premultiplied). On whole pixels they are the level's own. Otherwise
    OpenSlide paints the level's tiles translated by the fraction through cairo, whose filter then
    interpolates bilinearly (pixman: 7-bit weights, premultiplied alpha, transparent outside the level).
    Reproduced here with the same weights on the level's pixels: opaque pixels within 2 levels of OpenSlide
    4.0.1, premultiplied colour within 4 where its alpha is partial (most pixels exact: pixman's SIMD rounding
    is not reproduced bit for bit), where snapping to the grid was up to ~100 off."""
    if qx == 0 and qy == 0:
        out = _premultiplied(s, level, ix, iy, w, h)
    else:
        src = _premultiplied(s, level, ix, iy, w + 1, h + 1)
        wx, wy = qx * 2, qy * 2  # 8-bit weights, as pixman widens its 7-bit ones
        out = (src[:-1, :-1] * ((256 - wx) * (256 - wy)) + src[:-1, 1:] * (wx * (256 - wy))
               + src[1:, :-1] * ((256 - wx) * wy) + src[1:, 1:] * (wx * wy) + 0x8000) >> 16
    alpha = out[..., 3:4]
    partial = (alpha > 0) & (alpha < 255)
    # openslide-python's un-premultiplication truncates (255 * c / a).
    rgb = _np.where(partial, (out[..., :3] * 255) // _np.maximum(alpha, 1), out[..., :3])
    rgba = _np.concatenate([_np.where(alpha > 0, rgb, 0), alpha], axis=-1)
    return _np.clip(rgba, 0, 255).astype(_np.uint8)


@_exported
def get_error(slide: _OpenSlide) -> _Optional[str]:
    if slide._slide is None:
        raise ArgumentError("argument 1: ValueError: Passing closed slide object")
    return slide._error


@_exported
def get_property_names(slide: _OpenSlide) -> _List[str]:
    return list(_checked(slide).properties)


@_exported
def get_property_value(slide: _OpenSlide, name: str) -> _Optional[str]:
    return _checked(slide).properties.get(name)


@_exported
def get_associated_image_names(slide: _OpenSlide) -> _List[str]:
    return list(_checked(slide).associated_images)


@_exported
def get_associated_image_dimensions(slide: _OpenSlide, name: str) -> _Tuple[int, int]:
    dims = _checked(slide).associated_image_dimensions.get(name)
    if dims is None:
        raise OpenSlideError(f"no associated image named {name!r}")
    return dims


@_exported
def read_associated_image(slide: _OpenSlide, name: str) -> _PILImage.Image:
    s = _checked(slide)
    try:
        rgb = s.associated_images[name]
    except KeyError:
        raise OpenSlideError(f"no associated image named {name!r}") from None
    except _TilewiseError as e:
        raise slide.fail(e) from None
    return _PILImage.fromarray(_np.dstack([rgb, _np.full(rgb.shape[:2], 255, _np.uint8)]), "RGBA")


@_exported
def get_icc_profile_size(slide: _OpenSlide) -> int:
    return len(_checked(slide).icc_profile or b"")


@_exported
def read_icc_profile(slide: _OpenSlide) -> _Optional[bytes]:
    return _checked(slide).icc_profile


@_exported
def get_associated_image_icc_profile_size(slide: _OpenSlide, name: str) -> int:
    get_associated_image_dimensions(slide, name)  # the image must exist
    return len(_checked(slide).associated_icc_profile(name) or b"")


@_exported
def read_associated_image_icc_profile(slide: _OpenSlide, name: str) -> _Optional[bytes]:
    get_associated_image_dimensions(slide, name)
    return _checked(slide).associated_icc_profile(name)


@_exported
def get_version() -> str:
    return f"tilewise {_tilewise.__version__}"


@_exported
def cache_create(capacity: int) -> _OpenSlideCache:
    if not isinstance(capacity, int) or isinstance(capacity, bool):
        raise ArgumentError("argument 1: TypeError: Incorrect type")
    if capacity < 0:
        raise ArgumentError("argument 1: ValueError: Value out of range")
    return _OpenSlideCache(capacity)


@_exported
def set_cache(slide: _OpenSlide, cache: _OpenSlideCache) -> None:
    _checked(slide)
    if not isinstance(cache, _OpenSlideCache):
        raise ArgumentError("argument 2: TypeError: Not an _OpenSlideCache reference")
    _tilewise.set_cache_capacity(cache.capacity)


@_exported
def cache_release(cache: _OpenSlideCache) -> None:
    if not isinstance(cache, _OpenSlideCache):
        raise ArgumentError("argument 1: TypeError: Not an _OpenSlideCache reference")
