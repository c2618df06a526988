"""openslide-python compatibility: ``import tilewise.openslide as openslide``.

The surface of openslide-python 1.4 (``OpenSlide``, ``ImageSlide``, ``open_slide``, ``OpenSlideCache``,
exceptions, ``PROPERTY_NAME_*``, ``deepzoom.DeepZoomGenerator``) over tilewise. Pixels equal OpenSlide's
(JPEG exactly, JPEG 2000 within 1) wherever the level-0 location maps to a whole pixel of the level;
OpenSlide additionally resamples by the sub-pixel remainder at levels > 0 (cairo bilinear), tilewise snaps
to the level grid. Regions outside the slide are transparent (0, 0, 0, 0), as OpenSlide returns them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from ctypes import ArgumentError
from io import BytesIO
from typing import Iterator, Optional, Tuple

import numpy as np
from PIL import Image, ImageCms

import tilewise
from . import lowlevel
from .lowlevel import OpenSlideError, OpenSlideUnsupportedFormatError, OpenSlideVersionError
from ..errors import TilewiseError

__version__ = "1.4.7"
__library_version__ = f"tilewise {tilewise.__version__}"

PROPERTY_NAME_COMMENT = "openslide.comment"
PROPERTY_NAME_VENDOR = "openslide.vendor"
PROPERTY_NAME_QUICKHASH1 = "openslide.quickhash-1"
PROPERTY_NAME_BACKGROUND_COLOR = "openslide.background-color"
PROPERTY_NAME_OBJECTIVE_POWER = "openslide.objective-power"
PROPERTY_NAME_MPP_X = "openslide.mpp-x"
PROPERTY_NAME_MPP_Y = "openslide.mpp-y"
PROPERTY_NAME_BOUNDS_X = "openslide.bounds-x"
PROPERTY_NAME_BOUNDS_Y = "openslide.bounds-y"
PROPERTY_NAME_BOUNDS_WIDTH = "openslide.bounds-width"
PROPERTY_NAME_BOUNDS_HEIGHT = "openslide.bounds-height"
PROPERTY_NAME_BARCODE = "openslide.barcode"


class OpenSlideCache:
    """A tile cache of `capacity` bytes. tilewise has one cache per process: attaching a cache to any slide
    sets that process-wide budget. Bad capacities raise ctypes.ArgumentError, as openslide-python's do."""

    def __init__(self, capacity: int):
        self._capacity = capacity
        self._cache = lowlevel.cache_create(capacity)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self._capacity!r})"


class AbstractSlide:
    """The interface shared by OpenSlide and ImageSlide."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    @classmethod
    def detect_format(cls, filename) -> Optional[str]:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    @property
    def level_count(self) -> int:
        return len(self.level_dimensions)

    @property
    def dimensions(self) -> Tuple[int, int]:
        return self.level_dimensions[0]

    def get_best_level_for_downsample(self, downsample: float) -> int:
        raise NotImplementedError

    def get_thumbnail(self, size) -> Image.Image:
        """The whole slide scaled to fit `size`, composited on the background colour."""
        downsample = max(dim / thumb for dim, thumb in zip(self.dimensions, size))
        level = self.get_best_level_for_downsample(downsample)
        tile = self.read_region((0, 0), level, self.level_dimensions[level])
        background = "#" + self.properties.get(PROPERTY_NAME_BACKGROUND_COLOR, "ffffff")
        thumb = Image.new("RGB", tile.size, background)
        thumb.paste(tile, None, tile)
        thumb.thumbnail(size, Image.Resampling.LANCZOS)
        if self.color_profile is not None:
            thumb.info["icc_profile"] = self.color_profile.tobytes()
        return thumb

    def set_cache(self, cache: OpenSlideCache) -> None:
        raise NotImplementedError


class _PropertyMap(Mapping):
    """A live view of a slide's properties: it fails, as the slide does, once the slide is closed or in error."""

    def __init__(self, osr: "lowlevel._OpenSlide"):
        self._osr = osr

    def __getitem__(self, key: str) -> str:
        value = lowlevel.get_property_value(self._osr, key)
        if value is None:
            raise KeyError(key)
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(lowlevel.get_property_names(self._osr))

    def __len__(self) -> int:
        return len(lowlevel.get_property_names(self._osr))

    def __repr__(self) -> str:
        return f"<_PropertyMap {dict(self)!r}>"


class _AssociatedImageMap(Mapping):
    """Associated images as RGBA PIL images, read on access."""

    def __init__(self, osr: "lowlevel._OpenSlide", profile: Optional[bytes]):
        self._osr = osr
        self._profile = profile

    def __getitem__(self, name: str) -> Image.Image:
        if name not in lowlevel.get_associated_image_names(self._osr):
            raise KeyError(name)
        image = lowlevel.read_associated_image(self._osr, name)
        profile = lowlevel.read_associated_image_icc_profile(self._osr, name)
        if profile == self._profile:
            profile = self._profile  # the slide's copy, as openslide-python shares it
        if profile:
            image.info["icc_profile"] = profile
        return image

    def __iter__(self) -> Iterator[str]:
        return iter(lowlevel.get_associated_image_names(self._osr))

    def __len__(self) -> int:
        return len(lowlevel.get_associated_image_names(self._osr))

    def __repr__(self) -> str:
        return f"<_AssociatedImageMap {dict(self)!r}>"


class OpenSlide(AbstractSlide):
    """A whole-slide image read by tilewise, with openslide-python's interface (built, as openslide-python's
    is, on the functions of ``lowlevel``)."""

    def __init__(self, filename):
        AbstractSlide.__init__(self)
        self._filename = filename
        self._osr = lowlevel.open(filename)
        self._profile = lowlevel.read_icc_profile(self._osr)  # one copy, shared by regions and associated images

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self._filename!r})"

    def __reduce__(self):
        return (OpenSlide, (self._filename,))

    @classmethod
    def detect_format(cls, filename) -> Optional[str]:
        return lowlevel.detect_vendor(filename)

    def close(self) -> None:
        lowlevel.close(self._osr)

    @property
    def level_count(self) -> int:
        return lowlevel.get_level_count(self._osr)

    @property
    def level_dimensions(self) -> Tuple[Tuple[int, int], ...]:
        return tuple(lowlevel.get_level_dimensions(self._osr, i) for i in range(self.level_count))

    @property
    def level_downsamples(self) -> Tuple[float, ...]:
        return tuple(lowlevel.get_level_downsample(self._osr, i) for i in range(self.level_count))

    @property
    def properties(self) -> Mapping:
        lowlevel.get_property_names(self._osr)  # fails now on a closed handle, as openslide-python does
        return _PropertyMap(self._osr)

    @property
    def associated_images(self) -> Mapping:
        return _AssociatedImageMap(self._osr, self._profile)

    @property
    def color_profile(self) -> Optional[ImageCms.ImageCmsProfile]:
        icc = lowlevel.read_icc_profile(self._osr)
        return ImageCms.ImageCmsProfile(BytesIO(icc)) if icc else None

    def get_best_level_for_downsample(self, downsample: float) -> int:
        return lowlevel.get_best_level_for_downsample(self._osr, downsample)

    def read_region(self, location, level: int, size) -> Image.Image:
        """An RGBA image of `size` pixels of `level` at level-0 `location`; transparent outside the slide
        (and for a level that does not exist), not premultiplied."""
        x, y = (int(v) for v in location)
        w, h = (int(v) for v in size)
        image = lowlevel.read_region(self._osr, x, y, level, w, h)
        if self._profile:
            image.info["icc_profile"] = self._profile
        return image

    def set_cache(self, cache: OpenSlideCache) -> None:
        if not isinstance(cache, OpenSlideCache):
            raise TypeError("Not a cache object")
        lowlevel.set_cache(self._osr, cache._cache)


class ImageSlide(AbstractSlide):
    """A plain image (anything PIL opens) with the slide interface: one level, no properties."""

    def __init__(self, file):
        AbstractSlide.__init__(self)
        self._file_arg = file
        if isinstance(file, Image.Image):
            self._close, self._image = False, file
        else:
            self._close, self._image = True, Image.open(lowlevel._filename(file))
        self._profile = self._image.info.get("icc_profile")

    def _open_image(self) -> Image.Image:
        if self._image is None:
            raise ValueError("Cannot read from a closed slide")
        return self._image

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self._file_arg!r})"

    @classmethod
    def detect_format(cls, filename) -> Optional[str]:
        try:
            with Image.open(lowlevel._filename(filename)) as img:
                return img.format
        except OSError:
            return None

    def close(self) -> None:
        if self._close and self._image is not None:
            self._image.close()
        self._image = None

    @property
    def level_dimensions(self):
        return (self._open_image().size,)

    @property
    def level_downsamples(self):
        return (1.0,)

    @property
    def properties(self):
        return {}

    @property
    def associated_images(self):
        return {}

    @property
    def color_profile(self):
        return ImageCms.ImageCmsProfile(BytesIO(self._profile)) if self._profile else None

    def get_best_level_for_downsample(self, downsample: float) -> int:
        return 0

    def read_region(self, location, level: int, size) -> Image.Image:
        w, h = (int(v) for v in size)
        if w < 0 or h < 0:
            raise OpenSlideError(f"negative width ({w}) or negative height ({h}) not allowed")
        if level != 0:
            raise OpenSlideError("Invalid level")
        image = self._open_image()
        tile = Image.new("RGBA", (w, h), (0, 0, 0, 0))
        x, y = (int(v) for v in location)
        iw, ih = image.size
        x0, y0, x1, y1 = max(0, x), max(0, y), min(iw, x + w), min(ih, y + h)
        if x1 > x0 and y1 > y0:
            crop = image.crop((x0, y0, x1, y1)).convert("RGBA")
            tile.paste(crop, (x0 - x, y0 - y))
        if self._profile is not None:
            tile.info["icc_profile"] = self._profile
        return tile

    def set_cache(self, cache: OpenSlideCache) -> None:
        pass


def open_slide(filename):
    """An OpenSlide for a slide file, an ImageSlide for any other image PIL can open."""
    try:
        return OpenSlide(filename)
    except OpenSlideUnsupportedFormatError:
        return ImageSlide(filename)


__all__ = [
    "OpenSlide", "ImageSlide", "AbstractSlide", "open_slide", "OpenSlideCache", "OpenSlideError",
    "OpenSlideUnsupportedFormatError", "OpenSlideVersionError", "__version__", "__library_version__",
] + [name for name in dir() if name.startswith("PROPERTY_NAME_")]
