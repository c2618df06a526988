"""tilewise.convert and tilewise.write_array: a slide, or an array the caller holds (a mask, a heatmap), as a
tiled pyramidal TIFF, an OME-TIFF, an OME-Zarr group or a DICOM WSI series (the C++ core's tilewise::convert
and tilewise::write_image)."""

from __future__ import annotations

import os
from typing import Any, Callable, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _core, _gpu
from .errors import InvalidArgumentError
from .slide import Slide, open as _open


def convert(
    source: Union[str, os.PathLike, Slide],
    output: Union[str, os.PathLike],
    *,
    format: str = "",
    tile_size: int = 256,
    codec: str = "auto",
    quality: int = 90,
    subsample: bool = True,
    copy_tiles: bool = False,
    levels: int = 0,
    downsample: str = "mean",
    skip_damaged: bool = False,
    progress: Optional[Callable[[int, int], None]] = None,
    device: Any = "cpu",
) -> List[str]:
    """Writes `source` (a path tilewise opens, or an open Slide: its scene) to `output`: level 0 as read, each
    next level a 2 x 2 box halving of the one before down to one tile, in tiles of `tile_size`.

    - ``*.tif`` / ``*.tiff`` (RGB slides): a generic pyramidal BigTIFF, which OpenSlide reads as generic-tiff.
    - ``*.ome.tif`` / ``*.ome.tiff``: an OME-TIFF, every channel, focal plane and time point at its own
      sample type, each plane's levels as SubIFDs, the channels' names, colours and wavelengths in the
      OME-XML; an RGB slide's planes (its focal planes too, as NDPI keeps them) are interleaved RGB.
    - ``*.svs`` (RGB slides): an Aperio SVS, the pyramid with Aperio's descriptions (mpp, objective power),
      a thumbnail as directory 1 and the slide's label (LZW, exact) and macro, which OpenSlide, cuCIM and
      tiffslide read as Aperio with its associated images.
    - ``*.zarr`` (``format="ome-zarr"``): an OME-Zarr 0.5 group (Zarr v3), each level an array over
      (t, c, z, y, x) at the slide's own sample type (an RGB slide's as three uint8 channels, with its focal
      planes), sharded,
      one tile per chunk, with NGFF multiscales (scale in micrometres) and omero channel metadata, which
      zarr, ome-zarr-py, napari and bioio read.
    - ``format="dicom"`` (slides with mpp): a new folder holding a DICOM WSI series, one VL Whole Slide
      Microscopy Image instance per level (TILED_FULL; RGB as JPEG baseline or uncompressed frames, with
      the label and macro as LABEL and OVERVIEW instances; channels of 8 or 16 bits and one focal plane as
      one optical path each of MONOCHROME2 frames, JPEG-LS lossless or uncompressed), which pydicom,
      wsidicom, OpenSlide and a PACS read.

    `format`: "tiff", "ome-tiff", "svs", "ome-zarr" or "dicom" ("": from the name). `codec`: "auto" (OME-Zarr:
    zstd; else JPEG for RGB, deflate for channels), "jpeg" (8-bit RGB, not OME-Zarr; at `quality`, chroma
    4:2:0 or with ``subsample=False`` 4:4:4), "jpeg2000" (lossy at `quality`) or "jpeg2000-lossless" (8- or
    16-bit; TIFF compression 33005 and DICOM; not OME-Zarr), "deflate" or "zstd" (not DICOM), "lzw" (TIFFs),
    "jpegls" (DICOM; the default there for channels) or "none" (lossless).
    `copy_tiles`: JPEG tiles of level 0 that already are what the output would encode (baseline YCbCr,
    same size and chroma subsampling) are copied as stored, not decoded and encoded again (their pixels
    stay the source's); the levels below are made from the decoded level 0. mpp becomes the resolution
    tags (the OME physical pixel size, the OME-Zarr scale); an RGB slide's ICC profile is carried over to
    TIFF and DICOM. The output is written under a temporary name and renamed when complete: on any error
    (a damaged tile of the source names its file, level and tile) nothing is left at `output`. `levels`:
    at most this many (0: all). `downsample`: "mean" (of each 2 x 2 box) or "nearest" (its top-left
    pixel, so label masks keep their labels). `skip_damaged`: a damaged source tile (CorruptError) is written
    as background (white for RGB, 0 for channels) instead of stopping the conversion; the errors of the
    tiles skipped (each naming its file, level and tile) are returned, an empty list when none was.
    `progress(rows_done, rows_total)` is called after each band of level 0 (rows over every plane); an
    exception it raises stops the conversion and propagates.
    `device`: "cpu" (every core), or "cuda" / "cuda:N" (RGB slides with codec "jpeg", "jpeg2000" or
    "jpeg2000-lossless"): level 0 read into GPU memory (decoded there where the slide's tiles allow), each
    level halved by a CUDA kernel and its tiles encoded by nvImageCodec (nvJPEG, nvJPEG2000), the pixels
    never passing through host memory; the streams are those the CPU writes for the same options (JPEG
    within a level or two of the CPU's pixels; lossless JPEG 2000 keeps the pixels read, where a JPEG
    source's tiles decoded by the GPU are within 1-2 of libjpeg-turbo's). UnsupportedError without a
    usable GPU."""
    kind, index = _gpu.parse_device(device)
    cuda_device = -1
    if kind == "cuda":
        _gpu.configure()  # the options are checked before the device (an output the GPU does not write says so)
        cuda_device = index
    if isinstance(source, Slide):
        return _core.convert(source._slide, os.fspath(output), format, tile_size, codec, quality, subsample, copy_tiles,
                             levels, downsample, skip_damaged, progress, cuda_device)
    with _open(source) as slide:
        return _core.convert(slide._slide, os.fspath(output), format, tile_size, codec, quality, subsample, copy_tiles,
                             levels, downsample, skip_damaged, progress, cuda_device)


def write_array(
    array: Any,
    output: Union[str, os.PathLike],
    *,
    mpp: Optional[Union[float, Tuple[float, float]]] = None,
    like: Optional[Union[str, os.PathLike, Slide]] = None,
    channel_names: Optional[Sequence[str]] = None,
    rgb: Optional[bool] = None,
    name: str = "",
    format: str = "",
    tile_size: int = 256,
    codec: str = "auto",
    quality: int = 90,
    subsample: bool = True,
    levels: int = 0,
    downsample: str = "mean",
    progress: Optional[Callable[[int, int], None]] = None,
) -> None:
    """Writes `array` - a mask, a heatmap, a model's output - as a pyramid, in any format `convert` writes.

    `array` is (height, width) or (height, width, channels), as `Slide.read_region` returns, of uint8,
    uint16, uint32, int8, int16, int32 or float32 (bool as uint8; float64 is refused: write float32), a
    NumPy array or anything that slices into one (a dask array is computed one band of rows at a time, so
    it need not fit in memory). (height, width, 3) of uint8 is an RGB image unless `rgb=False`; other
    channels are written one plane each (OME-TIFF, OME-Zarr), named by `channel_names`.

    Pixel size: `mpp` (one number or (x, y), micrometres per pixel), or `like`, the slide (or its path) the
    array was computed from: its level-0 mpp scaled by the ratio of its level 0 to the array (a heatmap at
    1/16 of the slide's size gets 16 x its mpp). `downsample="nearest"` keeps a label mask's values in the
    levels below. The other options are `convert`'s."""
    shape = tuple(array.shape)
    if len(shape) not in (2, 3):
        raise InvalidArgumentError(f"an array of shape {shape}: (height, width) or (height, width, channels) is written")
    height, width = int(shape[0]), int(shape[1])
    channels = int(shape[2]) if len(shape) == 3 else 1
    dtype = np.dtype(array.dtype)
    if dtype == np.bool_:
        dtype = np.dtype(np.uint8)
    if rgb is None:
        rgb = channels == 3 and dtype == np.uint8
    if rgb and (channels != 3 or dtype != np.uint8):
        raise InvalidArgumentError(f"rgb needs (height, width, 3) of uint8, not {shape} of {dtype}")
    if like is not None:
        if mpp is not None:
            raise InvalidArgumentError("give mpp or like, not both")
        mpp = _mpp_like(like, width, height)
    elif mpp is not None and not isinstance(mpp, tuple):
        mpp = (float(mpp), float(mpp))
    names = list(channel_names) if channel_names is not None else []
    if names and (rgb or len(names) != channels):
        raise InvalidArgumentError(f"{len(names)} channel names for {'an RGB image' if rgb else f'{channels} channels'}")

    def read(c: int, z: int, t: int, y: int, rows: int) -> np.ndarray:
        band = array[y:y + rows] if rgb or len(shape) == 2 else array[y:y + rows, :, c]
        return np.ascontiguousarray(np.asarray(band), dtype=dtype)

    _core.write_image(read, os.fspath(output), name or os.path.basename(os.fspath(output)), width, height,
                      1 if rgb else channels, 1, 1, dtype.name, bool(rgb), mpp, names, format, tile_size, codec,
                      quality, subsample, levels, downsample, progress)


def _mpp_like(like: Union[str, os.PathLike, Slide], width: int, height: int) -> Tuple[float, float]:
    def scaled(slide: Slide) -> Tuple[float, float]:
        if slide.mpp is None:
            raise InvalidArgumentError(f"{slide.format} slide states no mpp to scale")
        (w, h), (mx, my) = slide.dimensions, slide.mpp
        return mx * w / width, my * h / height

    if isinstance(like, Slide):
        return scaled(like)
    with _open(like) as slide:
        return scaled(slide)


def stow(
    folder: Union[str, os.PathLike],
    dicomweb_url: str,
    *,
    token: Optional[str] = None,
    headers: Optional[Sequence[str]] = None,
) -> None:
    """Stores the DICOM WSI series in `folder` (as ``convert(..., format="dicom")`` writes it) on a DICOMweb
    server with STOW-RS: each instance one POST to ``dicomweb_url + "/studies"`` (`dicomweb_url`: the
    service's root, such as ``http://host:8042/dicom-web``), streamed from its file. `token`: sent as
    ``Authorization: Bearer <token>``; `headers`: more ``"Name: value"`` lines. Raises IoError naming the
    URL, the instance and the HTTP status when the server does not store one."""
    lines = list(headers or [])
    if token:
        lines.append(f"Authorization: Bearer {token}")
    _core.stow_dicom_folder(os.fspath(folder), dicomweb_url, lines)
