"""Deep Zoom tiles from a slide (openslide-python's ``openslide.deepzoom`` interface).

Four coordinate frames: tile (col, row) in a Deep Zoom level (t), pixels of the Deep Zoom level (z),
pixels of the slide level chosen for it (l) and pixels of slide level 0 (l0). Deep Zoom level k has
ceil(level-0 size / 2^(levels-1-k)) pixels; each is read from the slide level best suited to its downsample
and scaled to the Deep Zoom size when they differ.
"""

from __future__ import annotations

import math
from io import BytesIO
from typing import Tuple
from xml.etree.ElementTree import Element, ElementTree, SubElement

from PIL import Image

from . import (PROPERTY_NAME_BACKGROUND_COLOR, PROPERTY_NAME_BOUNDS_HEIGHT, PROPERTY_NAME_BOUNDS_WIDTH,
               PROPERTY_NAME_BOUNDS_X, PROPERTY_NAME_BOUNDS_Y)


class DeepZoomGenerator:
    """Generates Deep Zoom tiles and the .dzi metadata of a slide."""

    BOUNDS_OFFSET_PROPS = (PROPERTY_NAME_BOUNDS_X, PROPERTY_NAME_BOUNDS_Y)
    BOUNDS_SIZE_PROPS = (PROPERTY_NAME_BOUNDS_WIDTH, PROPERTY_NAME_BOUNDS_HEIGHT)

    def __init__(self, osr, tile_size: int = 254, overlap: int = 1, limit_bounds: bool = False):
        self._osr = osr
        self._tile = tile_size
        self._overlap = overlap
        self._limit_bounds = limit_bounds
        l0_w, l0_h = osr.dimensions
        if limit_bounds:
            props = osr.properties
            self._l0_offset = (int(props.get(PROPERTY_NAME_BOUNDS_X, 0)), int(props.get(PROPERTY_NAME_BOUNDS_Y, 0)))
            scale = (int(props.get(PROPERTY_NAME_BOUNDS_WIDTH, l0_w)) / l0_w,
                     int(props.get(PROPERTY_NAME_BOUNDS_HEIGHT, l0_h)) / l0_h)
            self._l_dimensions = tuple((int(math.ceil(w * scale[0])), int(math.ceil(h * scale[1])))
                                       for w, h in osr.level_dimensions)
        else:
            self._l0_offset = (0, 0)
            self._l_dimensions = tuple(osr.level_dimensions)
        self._l0_dimensions = self._l_dimensions[0]

        sizes = [self._l0_dimensions]
        while sizes[-1][0] > 1 or sizes[-1][1] > 1:
            sizes.append(tuple(max(1, int(math.ceil(v / 2))) for v in sizes[-1]))
        self._z_dimensions = tuple(reversed(sizes))
        self._t_dimensions = tuple((int(math.ceil(w / tile_size)), int(math.ceil(h / tile_size)))
                                   for w, h in self._z_dimensions)
        self._dz_levels = len(self._z_dimensions)
        l0_z_downsamples = tuple(2 ** (self._dz_levels - k - 1) for k in range(self._dz_levels))
        self._slide_level = tuple(osr.get_best_level_for_downsample(d) for d in l0_z_downsamples)
        self._l0_l_downsamples = osr.level_downsamples
        self._l_z_downsamples = tuple(l0_z_downsamples[k] / self._l0_l_downsamples[self._slide_level[k]]
                                      for k in range(self._dz_levels))
        self._background = "#" + osr.properties.get(PROPERTY_NAME_BACKGROUND_COLOR, "ffffff")

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}({self._osr!r}, tile_size={self._tile!r}, overlap={self._overlap!r}, "
                f"limit_bounds={self._limit_bounds!r})")

    @property
    def level_count(self) -> int:
        return self._dz_levels

    @property
    def level_tiles(self):
        return self._t_dimensions

    @property
    def level_dimensions(self):
        return self._z_dimensions

    @property
    def tile_count(self) -> int:
        return sum(cols * rows for cols, rows in self._t_dimensions)

    def get_tile(self, level: int, address) -> Image.Image:
        """An RGB tile of Deep Zoom `level` at (col, row) `address`."""
        args, z_size = self._tile_info(level, address)
        region = self._osr.read_region(*args)
        profile = region.info.get("icc_profile")
        tile = Image.composite(region, Image.new("RGB", region.size, self._background), region)
        if tile.size != z_size:
            tile.thumbnail(z_size, Image.Resampling.LANCZOS)
        if profile is not None:
            tile.info["icc_profile"] = profile
        return tile

    def get_tile_coordinates(self, level: int, address):
        """The read_region() arguments (level-0 location, slide level, size) of a tile."""
        return self._tile_info(level, address)[0]

    def get_tile_dimensions(self, level: int, address) -> Tuple[int, int]:
        return self._tile_info(level, address)[1]

    def _tile_info(self, level: int, address):
        if level < 0 or level >= self._dz_levels:
            raise ValueError("Invalid level")
        for t, limit in zip(address, self._t_dimensions[level]):
            if t < 0 or t >= limit:
                raise ValueError("Invalid address")
        slide_level = self._slide_level[level]
        overlap_tl = tuple(self._overlap * int(t != 0) for t in address)
        overlap_br = tuple(self._overlap * int(t != limit - 1) for t, limit in zip(address, self._t_dimensions[level]))
        z_size = tuple(min(self._tile, z_limit - self._tile * t) + tl + br
                       for t, z_limit, tl, br in zip(address, self._z_dimensions[level], overlap_tl, overlap_br))
        l_location = [self._l_z_downsamples[level] * (self._tile * t - tl) for t, tl in zip(address, overlap_tl)]
        l0_location = tuple(int(self._l0_l_downsamples[slide_level] * l + offset)
                            for l, offset in zip(l_location, self._l0_offset))
        l_size = tuple(int(min(math.ceil(self._l_z_downsamples[level] * z), l_limit - math.ceil(l)))
                       for l, z, l_limit in zip(l_location, z_size, self._l_dimensions[slide_level]))
        return (l0_location, slide_level, l_size), z_size

    def get_dzi(self, format: str) -> str:  # noqa: A002 - openslide-python's argument name
        """The XML of the .dzi file, for tiles of image `format` ("png" or "jpeg")."""
        image = Element("Image", TileSize=str(self._tile), Overlap=str(self._overlap), Format=format,
                        xmlns="http://schemas.microsoft.com/deepzoom/2008")
        w, h = self._l0_dimensions
        SubElement(image, "Size", Width=str(w), Height=str(h))
        buf = BytesIO()
        ElementTree(element=image).write(buf, encoding="UTF-8")
        return buf.getvalue().decode("UTF-8")
