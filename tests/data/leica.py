"""A writer of Leica SCN slides (tiled BigTIFF + the SCN XML in the first ImageDescription), laid out as
OpenSlide 4.0.1 reads them, for testing against it.

The collection is a ground-truth `world` image at `nm` nanometres per pixel. A macro image covers the whole
collection (downsampled by `macro_scale`); each main image is a rectangle of the world (x, y, w, h in world
pixels) stored as `dims` dimensions, each 1/4 of the one before (box filter), each its own tiled directory.
Offsets and sizes are chosen by the caller; multiples of 4^(dims-1) keep every level on whole pixels.

A fluorescence image is a rectangle of the collection holding (C, H, W) grey channels (uint8 or uint16), each
channel's `dims` resolutions its own directories (dimension attributes c and r), the channels named in
scanSettings/channelSettings, its illumination source "fluorescence" (OpenSlide leaves such images out;
tifffile reads each image as a series of (C, Z, Y, X) levels)."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional, Sequence, Tuple

import numpy as np
import tifffile

NS_2010_10 = "http://www.leica-microsystems.com/scn/2010/10/01"
NS_2010_03 = "http://www.leica-microsystems.com/scn/2010/03/10"


def _down(image: np.ndarray, f: int) -> np.ndarray:
    if f == 1:
        return image
    h, w = image.shape[:2]
    return image[: h // f * f, : w // f * f].reshape(h // f, f, w // f, f, 3).mean(axis=(1, 3)).round().astype(np.uint8)


def _down_grey(plane: np.ndarray, f: int) -> np.ndarray:
    if f == 1:
        return plane
    h, w = plane.shape
    mean = plane[: h // f * f, : w // f * f].reshape(h // f, f, w // f, f).mean(axis=(1, 3))
    return mean.round().astype(plane.dtype)


def write_scn(path, world: np.ndarray, mains: Sequence[Tuple[int, int, int, int]], *, nm: int = 500, dims: int = 3,
              macro_scale: int = 16, tile: int = 128, compression: str = "zlib", namespace: str = NS_2010_10,
              illumination: Sequence[str] = (), objective: str = "20", barcode: Optional[str] = "VFctMDA0Mg==",
              focal_planes: int = 1, macro: bool = True, inverted: Sequence[int] = (),
              fluorescence: Sequence[Tuple[Tuple[int, int, int, int], np.ndarray, Sequence[str]]] = ()) -> Path:
    """Writes the slide; returns its path. `illumination[i]` overrides main image i's source (default
    brightfield); `focal_planes` > 1 adds dimensions of plane z=1 that OpenSlide ignores; the main images
    numbered in `inverted` hold the world's negative (so that where images overlap, which one shows is seen).
    `fluorescence`: images after the main ones, each ((x, y, w, h) of the collection in world pixels, (C, h', w')
    grey channels, channel names)."""
    path = Path(path)
    wh, ww = world.shape[:2]
    pages: List[np.ndarray] = []
    images_xml = []

    def dimension_xml(arrays: List[np.ndarray], z: Optional[int]) -> str:
        out = []
        for r, a in enumerate(arrays):
            zattr = f' z="{z}"' if z is not None else ""
            out.append(f'<dimension sizeX="{a.shape[1]}" sizeY="{a.shape[0]}" r="{r}" ifd="{len(pages)}"{zattr}/>')
            pages.append(a)
        return "".join(out)

    def image_xml(name: str, arrays_by_plane, view: Tuple[int, int, int, int], source: str, obj: str) -> str:
        x, y, w, h = view
        dims_xml = "".join(dimension_xml(arrays, z if focal_planes > 1 else None) for z, arrays in enumerate(arrays_by_plane))
        return (f'<image name="{name}" uuid="urn:uuid:{name}"><creationDate>2013-04-05T06:07:08.09Z</creationDate>'
                f'<device model="Leica SCN400;Leica SCN" version="1.5.1.10864 2012/05/10 13:29:07;1.5.1.10804"/>'
                f'<pixels sizeX="{arrays_by_plane[0][0].shape[1]}" sizeY="{arrays_by_plane[0][0].shape[0]}">{dims_xml}</pixels>'
                f'<view sizeX="{w}" sizeY="{h}" offsetX="{x}" offsetY="{y}" spacingZ="0"/>'
                f'<scanSettings><objectiveSettings><objective>{obj}</objective></objectiveSettings>'
                f'<illuminationSettings><numericalAperture>0.7</numericalAperture>'
                f'<illuminationSource>{source}</illuminationSource></illuminationSettings></scanSettings></image>')

    if macro:
        m = _down(world, macro_scale)
        images_xml.append(image_xml("macro", [[m, _down(m, 4)]], (0, 0, ww * nm, wh * nm), "brightfield", "1.25"))
    def fluorescence_xml(name: str, channels: np.ndarray, names: Sequence[str], view: Tuple[int, int, int, int]) -> str:
        out = []
        for c, plane in enumerate(channels):
            for r in range(dims):
                a = np.ascontiguousarray(_down_grey(plane, 4 ** r))
                out.append(f'<dimension sizeX="{a.shape[1]}" sizeY="{a.shape[0]}" r="{r}" c="{c}" ifd="{len(pages)}"/>')
                pages.append(a)
        x, y, w, h = view
        settings = "".join(f'<channel index="{c}" name="{n}"/>' for c, n in enumerate(names))
        return (f'<image name="{name}" uuid="urn:uuid:{name}"><creationDate>2013-04-05T06:07:08.09Z</creationDate>'
                f'<device model="Leica SCN400;Leica SCN" version="1.5.1.10864 2012/05/10 13:29:07;1.5.1.10804"/>'
                f'<pixels sizeX="{channels.shape[2]}" sizeY="{channels.shape[1]}">{"".join(out)}</pixels>'
                f'<view sizeX="{w}" sizeY="{h}" offsetX="{x}" offsetY="{y}" spacingZ="0"/>'
                f'<scanSettings><objectiveSettings><objective>{objective}</objective></objectiveSettings>'
                f'<channelSettings>{settings}</channelSettings>'
                f'<illuminationSettings><numericalAperture>0.7</numericalAperture>'
                f'<illuminationSource>fluorescence</illuminationSource></illuminationSettings></scanSettings></image>')

    for i, (x, y, w, h) in enumerate(mains):
        crop = np.ascontiguousarray(world[y:y + h, x:x + w])
        if i in inverted:
            crop = 255 - crop
        planes = []
        for z in range(focal_planes):
            base = crop if z == 0 else np.ascontiguousarray(255 - crop)
            planes.append([_down(base, 4 ** k) for k in range(dims)])
        source = illumination[i] if i < len(illumination) else "brightfield"
        images_xml.append(image_xml(f"main{i}", planes, (x * nm, y * nm, w * nm, h * nm), source, objective))
    for i, ((x, y, w, h), channels, names) in enumerate(fluorescence):
        images_xml.append(fluorescence_xml(f"fluorescence{i}", channels, names, (x * nm, y * nm, w * nm, h * nm)))
    bc = f"<barcode>{barcode}</barcode>" if barcode is not None else ""
    xml = (f'<?xml version="1.0" encoding="utf-8"?><scn xmlns="{namespace}"><collection name="tw" '
           f'uuid="urn:uuid:tw" sizeX="{ww * nm}" sizeY="{wh * nm}">{bc}{"".join(images_xml)}</collection></scn>')
    with tifffile.TiffWriter(path, bigtiff=True) as tw:
        for n, a in enumerate(pages):
            res = 1e7 / (nm * (world.shape[1] / max(1, a.shape[1])))  # pixels per centimetre, roughly
            tw.write(a, tile=(tile, tile), compression=compression, photometric="rgb" if a.ndim == 3 else "minisblack",
                     description=xml if n == 0 else None, metadata=None, resolution=(res, res), resolutionunit="CENTIMETER",
                     software="Leica SCN400")
    return path
