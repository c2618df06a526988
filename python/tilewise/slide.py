"""The native Python API: :func:`tilewise.open` and :class:`Slide`."""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from types import MappingProxyType
from typing import BinaryIO, Iterator, Mapping, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from . import _core, _extras, _gpu
from .errors import InvalidArgumentError, UnsupportedError


class Level(NamedTuple):
    """One pyramid level: size in pixels, downsample from level 0, decode-unit (tile or strip) size."""

    dimensions: Tuple[int, int]
    downsample: float
    tile_size: Tuple[int, int]
    compression: str


class Channel(NamedTuple):
    """One channel as the file describes it: name, display colour (r, g, b), excitation and emission
    wavelengths (nm) and exposure (s); None where the file does not say."""

    name: str
    color: Optional[Tuple[int, int, int]]
    excitation_nm: Optional[float]
    emission_nm: Optional[float]
    exposure_s: Optional[float]


class Scene(NamedTuple):
    """One image of a file that holds several: its name and level-0 (width, height)."""

    name: str
    dimensions: Tuple[int, int]


def _channel_list(c, count: int) -> "list[int]":
    """The channel indices ``c`` asks for (None: every channel), each checked against ``count``."""
    if c is None:
        return list(range(count))
    picked = [c] if isinstance(c, (int, np.integer)) else list(c)
    for i in picked:
        if not isinstance(i, (int, np.integer)) or not 0 <= int(i) < count:
            raise InvalidArgumentError(f"channel {i!r} does not exist (the image has {count} channels)")
    return [int(i) for i in picked]


def _pair(value: Sequence[int], what: str) -> Tuple[int, int]:
    try:
        a, b = value
        return int(a), int(b)
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"{what} must be a pair of integers, got {value!r}") from None


def _fill(fill: Optional[Sequence[int]]) -> Optional[Tuple[int, int, int]]:
    return None if fill is None else tuple(int(c) for c in fill)


def _locations(locations) -> np.ndarray:
    """(N, 2) int64 array of level-0 (x, y) from an array, a sequence of pairs or a flat sequence."""
    arr = np.asarray(locations, dtype=np.int64)
    if arr.ndim == 1 and arr.size % 2 == 0:
        arr = arr.reshape(-1, 2)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise InvalidArgumentError(f"locations must be (x, y) pairs, got an array of shape {arr.shape}")
    return np.ascontiguousarray(arr)


def _shown_path(path: str) -> str:
    """A path as reprs show it: a URL without its user information or query string (they carry credentials)."""
    if "://" not in path:
        return path
    scheme, rest = path.split("://", 1)
    rest = rest.split("?", 1)[0].split("#", 1)[0]
    host, sep, tail = rest.partition("/")
    return f"{scheme}://{host.rsplit('@', 1)[-1]}{sep}{tail}"


class RegionBatches:
    """Iterator over the batches of :meth:`Slide.read_regions`; ``len()`` is the number of batches.

    Stopping early (``break``, ``close()``, or dropping the iterator) cancels the reads not yet started."""

    def __init__(self, loader: "_core.BatchLoader", dtype: Optional[np.dtype] = None):
        self._loader = loader
        self._dtype = dtype  # planes: the image's sample type (the loader hands their bytes)

    @property
    def last_indices(self) -> list:
        """The location indices of the batch returned (or raised) last."""
        return self._loader.last_indices

    def __len__(self) -> int:
        return len(self._loader)

    def __iter__(self) -> "RegionBatches":
        return self

    def __next__(self) -> "np.ndarray | _gpu.DeviceArray":
        pixels = self._loader.next()  # raises the batch's first item error, typed
        if pixels is None:
            raise StopIteration
        if isinstance(pixels, _core.DeviceBuffer):
            return _gpu.DeviceArray(pixels)
        return pixels if self._dtype is None else pixels.view(self._dtype)

    def close(self) -> None:
        self._loader.close()

    def __enter__(self) -> "RegionBatches":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _AssociatedImages(Mapping):
    """Associated images (label, macro, thumbnail, ...), decoded on first access."""

    def __init__(self, core: "_core.Slide"):
        self._core = core
        self._names = [a.name for a in core.associated_images]

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self._names:
            raise KeyError(name)
        return self._core.read_associated_image(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


def _file_size(f) -> int:
    f.seek(0, os.SEEK_END)
    return int(f.tell())


def _file_reader(f):
    """read(offset, length) -> bytes over a file object, one seek + read at a time."""
    lock = threading.Lock()

    def read(offset: int, length: int) -> bytes:
        with lock:
            f.seek(offset)
            chunks, left = [], length
            while left > 0:  # raw files may return short reads
                chunk = f.read(left)
                if not chunk:
                    break
                chunks.append(chunk)
                left -= len(chunk)
            return b"".join(chunks)

    return read


class Slide:
    """An open whole-slide image. Thread-safe: any number of threads may read one Slide at once.

    Slides are picklable (they pickle as their path and re-open themselves) and are context managers.

    `path` may also be a binary file object with ``seek`` and ``read`` (an open file, ``io.BytesIO``, an
    fsspec file such as ``fsspec.open("s3://...").open()``): reads go through it, serialised by a lock
    (such objects keep one position); the file stays open as long as the slide. A slide over a file object
    is not picklable, and formats of several files need a path.

    A DICOMweb series opens by its URL, ``https://host/dicom-web/studies/<StudyUID>/series/<SeriesUID>``.
    ``token`` (an OAuth 2 bearer token) and ``headers`` (a mapping of extra request headers) go with every
    request to an http(s):// or DICOMweb server; without them, ``TILEWISE_HTTP_TOKEN`` and
    ``TILEWISE_HTTP_HEADERS`` (one "Name: value" per line) stand in. A pickled slide carries them to the
    process that unpickles it (a DataLoader worker).
    """

    def __init__(self, path: "str | os.PathLike[str] | BinaryIO", scene: Optional[int] = None,
                 token: Optional[str] = None, headers: Optional[Mapping[str, str]] = None):
        if scene is not None and (not isinstance(scene, (int, np.integer)) or isinstance(scene, bool)):
            raise InvalidArgumentError(f"scene must be an index or None, got {scene!r}")
        scene = None if scene is None else int(scene)
        if hasattr(path, "read") and hasattr(path, "seek"):
            self._file = path
            self._path = str(getattr(path, "path", None) or getattr(path, "name", None) or "<file object>")
            self._core: Optional[_core.Slide] = _core.Slide.open_reader(_file_reader(path), _file_size(path),
                                                                        self._path, scene)
        else:
            self._file = None
            self._path = os.fspath(path)
            self._auth = (token, dict(headers) if headers else None)
            self._core = _core.Slide.open(self._path, scene, token or "",
                                          [f"{k}: {v}" for k, v in (headers or {}).items()])
        self._init_metadata()

    def _init_metadata(self) -> None:
        core = self._core
        self._levels = tuple(
            Level((l.width, l.height), l.downsample, (l.tile_width, l.tile_height), l.compression) for l in core.levels
        )
        self._properties = MappingProxyType(core.properties)
        axes = core.axes
        # RGB of one plane: brightfield; RGB of several focal planes or time points reads as planes of 3 channels
        self._axes = (axes.t, axes.channels, axes.z, axes.rgb and axes.z == 1 and axes.t == 1, np.dtype(axes.sample_type))
        # RGB reads (the brightfield path, any device) are those of the RGB planes' default focal plane
        self._rgb_planes, self._default_z = axes.rgb, axes.default_z
        self._z_spacing = axes.z_spacing or None
        self._scenes = tuple(Scene(s.name, (s.width, s.height)) for s in core.scenes)
        self._scene = core.scene
        self._channels = tuple(
            Channel(c.name, None if c.color is None else tuple(c.color), c.excitation_nm, c.emission_nm, c.exposure_s)
            for c in axes.channel_info
        )

    @property
    def _slide(self) -> "_core.Slide":
        if self._core is None:
            raise InvalidArgumentError(f"{self._path}: the slide is closed")
        return self._core

    # --- metadata -------------------------------------------------------------------------------
    @property
    def path(self) -> str:
        return self._path

    @property
    def format(self) -> str:
        """The detected format ("generic-tiff", "aperio", ...)."""
        return self._slide.format

    @property
    def levels(self) -> Tuple[Level, ...]:
        return self._levels

    @property
    def level_count(self) -> int:
        return len(self._levels)

    @property
    def dimensions(self) -> Tuple[int, int]:
        """Level-0 (width, height)."""
        return self._levels[0].dimensions

    axes = "tczyx"
    """The order of :meth:`shape`'s axes: time points, channels, focal planes, rows, columns (OME-NGFF's)."""

    def shape(self, level: int = 0) -> Tuple[int, int, int, int, int]:
        """(t, c, z, y, x) sizes of ``level``: time points, channels, focal planes, height, width."""
        t, c, z = self._axes[:3]
        w, h = self._levels[level].dimensions
        return (t, c, z, h, w)

    @property
    def dtype(self) -> np.dtype:
        """The type of the image's samples, which :meth:`read_region` gives (uint8 for RGB slides)."""
        return self._axes[4]

    @property
    def is_rgb(self) -> bool:
        """Whether the image is a brightfield RGB slide: three 8-bit channels (R, G, B) of one plane."""
        return self._axes[3]

    @property
    def scenes(self) -> Tuple["Scene", ...]:
        """The images of a file that holds several (CZI scenes, OME-TIFF images), each a :class:`Scene`; empty
        for a file of one. ``tilewise.open(path, scene=k)`` reads scene k."""
        return self._scenes

    @property
    def scene(self) -> Optional[int]:
        """The scene this slide reads, or None for the format's default: every CZI scene on one canvas (as
        OpenSlide shows them), an OME-TIFF's first image."""
        return self._scene

    @property
    def channels(self) -> Tuple[Channel, ...]:
        """One :class:`Channel` per channel (an RGB slide's are R, G and B)."""
        return self._channels

    @property
    def properties(self) -> Mapping:
        """Normalised ``openslide.*`` keys plus raw ``tiff.*`` and vendor keys."""
        return self._properties

    @property
    def associated_images(self) -> Mapping:
        """name -> (h, w, 3) uint8 array, decoded on access."""
        return _AssociatedImages(self._slide)

    @property
    def associated_image_dimensions(self) -> Mapping:
        """name -> (width, height) of each associated image, without decoding it."""
        return MappingProxyType({a.name: (a.width, a.height) for a in self._slide.associated_images})

    @property
    def mpp(self) -> Optional[Tuple[float, float]]:
        """Microns per pixel (x, y) at level 0, or None when the file does not state it."""
        return self._slide.mpp

    @property
    def z_spacing(self) -> Optional[float]:
        """Micrometres between consecutive focal planes, or None when the file does not state it (or has one)."""
        return self._z_spacing

    @property
    def icc_profile(self) -> Optional[bytes]:
        icc = self._slide.icc_profile
        return icc or None

    def associated_icc_profile(self, name: str) -> Optional[bytes]:
        """The associated image's own ICC profile (DICOM keeps one per image), or None."""
        if name not in self.associated_image_dimensions:
            raise KeyError(name)
        return self._slide.associated_icc_profile(name) or None

    @property
    def warnings(self) -> Tuple[str, ...]:
        """Problems that did not stop the slide from opening (malformed vendor metadata, unreadable
        associated images)."""
        return tuple(self._slide.warnings)

    @property
    def background(self) -> Tuple[int, int, int]:
        return tuple(self._slide.background)

    def best_level_for_downsample(self, downsample: float) -> int:
        return self._slide.best_level_for_downsample(float(downsample))

    def is_tiled(self, level: int = 0) -> bool:
        """Whether `level` is stored in tiles (False: in strips, its tile_size is a strip)."""
        return bool(self._slide.levels[level].tiled)

    def samples_per_pixel(self, level: int = 0) -> int:
        """Samples per pixel as `level` stores them (1 grey, 2 grey + alpha, 3 colour, 4 colour + alpha);
        regions are RGB whatever the count."""
        return int(self._slide.levels[level].samples_per_pixel)

    def absent_tiles(self, level: int = 0) -> "np.ndarray":
        """A (tiles down, tiles across) bool array, True where the file stores no tile (sparse files:
        Philips, DICOM TILED_SPARSE, TIFF tiles of length 0); those pixels read as the fill colour."""
        info = self._slide.levels[level]
        across = -(-info.width // info.tile_width)
        down = -(-info.height // info.tile_height)
        mask = np.zeros(across * down, bool)
        mask[np.asarray(self._slide.absent_tiles(level), np.int64)] = True
        return mask.reshape(down, across)

    def stored_area(self, level: int, location: Sequence[int], size: Sequence[int]) -> "list[tuple[int, int, int, int]]":
        """The parts of the region at level-pixel ``location`` of ``size`` that the file stores pixels for, as
        non-overlapping (x, y, width, height) rectangles in level pixels; the rest reads as the fill colour
        (outside the level, absent tiles, the gaps between MIRAX camera photos, which may also lie past the
        level's edges)."""
        x, y = _pair(location, "location")
        w, h = _pair(size, "size")
        return [tuple(r) for r in self._slide.stored_area(int(level), x, y, w, h)]

    # --- pixels ---------------------------------------------------------------------------------
    def read_region(
        self,
        location: Sequence[int],
        size: Sequence[int],
        level: int = 0,
        device: str = "cpu",
        fill: Optional[Sequence[int]] = None,
        out: Optional[np.ndarray] = None,
        use_cache: bool = True,
        *,
        c=None,
        z: Optional[int] = None,
        t: int = 0,
    ) -> np.ndarray:
        """Reads ``size`` = (w, h) pixels of ``level`` at level-0 ``location`` = (x, y).

        Returns a (h, w, C) array of the image's :attr:`dtype`, channel axis last: an RGB slide's (h, w, 3)
        uint8 RGB, other images' channels ``c`` (an index, a sequence of indices, or None for every channel)
        of focal plane ``z`` (default: the file's nominal focus, :attr:`default_z`) and time point ``t``, as the
        file stores them. ``c="rgb"`` gives any image's 8-bit RGB rendering (what OpenSlide shows: grey as grey,
        16-bit samples by their high byte) of its default plane. Pixels outside the level are ``fill`` in RGB (default: the format's background, white), 0 in
        channels. With ``out``, reads into that array (C-contiguous pixels, of the result's shape and type)
        instead. With ``device="cuda[:N]"`` the result is a :class:`DeviceArray` in GPU memory; channels and planes
        of grey JPEG 2000 and grey JPEG tiles are decoded there by nvImageCodec, those of other codecs decoded on
        the CPU and uploaded once (``gpu_stats`` counts them as ``host_plane_regions``); ``out`` is for host
        reads only.
        """
        kind, index = _gpu.parse_device(device)
        x, y = _pair(location, "location")
        w, h = _pair(size, "size")
        fill_rgb = _fill(fill)
        if not self._rgb_read(c, z, t):
            return self._read_planes(x, y, int(level), w, h, c, z, t, kind, fill_rgb, out, use_cache, False, index)
        if kind == "cuda":
            _gpu.check(index)
            return _gpu.DeviceArray(self._slide.read_region_cuda(x, y, int(level), w, h, fill_rgb, use_cache, index))
        if out is not None:
            if out.shape != (h, w, 3) or out.dtype != np.uint8:
                raise InvalidArgumentError(f"out must be a ({h}, {w}, 3) uint8 array")
            self._slide.read_region_into(x, y, int(level), out, fill_rgb, use_cache)
            return out
        return self._slide.read_region(x, y, int(level), w, h, fill_rgb, use_cache)

    @property
    def default_z(self) -> int:
        """The focal plane a read that names none shows (and the drop-ins): the file's nominal focus (an NDPI's
        focal plane 0, between those below and above it); 0 for other files."""
        return self._default_z

    def _rgb_read(self, c, z: Optional[int], t: int) -> bool:
        """Whether a read of channels ``c`` at (z, t) is the RGB rendering (the brightfield path): RGB channels
        (or c='rgb') of the default focal plane at time point 0."""
        default = z is None or z == self._default_z
        if isinstance(c, str):
            if c != "rgb":
                raise InvalidArgumentError(f"c must be a channel index, a sequence of them, None or 'rgb', got {c!r}")
            if not default or t:
                raise InvalidArgumentError(f"the RGB rendering (c='rgb') is of the default plane: z must be "
                                           f"{self._default_z} (or None) and t 0")
            return True
        return self._rgb_planes and c is None and default and t == 0

    def _read_planes(self, x, y, level, w, h, c, z, t, kind, fill_rgb, out, use_cache, level_frame, index=0):
        channels = _channel_list(c, self._axes[1])
        if kind == "cuda":
            if out is not None:
                raise InvalidArgumentError("out is for reads into host memory (device='cpu')")
            _gpu.check(index)
            z = self._default_z if z is None else z
            return _gpu.DeviceArray(self._slide.read_planes_cuda(x, y, level, channels, int(z), int(t), w, h, fill_rgb,
                                                                 use_cache, level_frame, index))
        shape = (h, w, len(channels))
        if out is None:
            _core.check_region_size(w, h, len(channels) * self.dtype.itemsize)
            out = np.empty(shape, self.dtype)
        elif out.shape != shape or out.dtype != self.dtype or not out.flags.c_contiguous:
            raise InvalidArgumentError(f"out must be a C-contiguous {shape} {self.dtype} array")
        z = self._default_z if z is None else z
        self._slide.read_planes(x, y, level, channels, int(z), int(t), out, fill_rgb, use_cache, level_frame)
        return out

    def read_level_region(self, location: Sequence[int], size: Sequence[int], level: int = 0,
                          fill: Optional[Sequence[int]] = None, use_cache: bool = True, *, c=None,
                          z: Optional[int] = None, t: int = 0) -> np.ndarray:
        """As :meth:`read_region`, with ``location`` in the pixel frame of ``level`` itself (no mapping from
        level 0), into host memory."""
        x, y = _pair(location, "location")
        w, h = _pair(size, "size")
        fill_rgb = _fill(fill)
        if not self._rgb_read(c, z, t):
            return self._read_planes(x, y, int(level), w, h, c, z, t, "cpu", fill_rgb, None, use_cache, True)
        return self._slide.read_region(x, y, int(level), w, h, fill_rgb, use_cache, level_frame=True)

    def read_regions(
        self,
        locations,
        size: Sequence[int],
        level: int = 0,
        batch_size: int = 64,
        num_workers: int = 0,
        prefetch: int = 2,
        shuffle: bool = False,
        seed: int = 0,
        drop_last: bool = False,
        device: str = "cpu",
        fill: Optional[Sequence[int]] = None,
        use_cache: bool = True,
        *,
        c=None,
        z: Optional[int] = None,
        t: int = 0,
    ) -> "RegionBatches":
        """Reads many regions of ``size`` at level-0 ``locations`` ((N, 2) array or sequence of (x, y)) in
        batches of (B, h, w, 3) uint8 arrays, on a persistent worker pool (``num_workers`` concurrent reads,
        0 = one per CPU) with ``prefetch`` batches read ahead (into a device: at least as many as 128 MiB of
        batches, up to 8, so that the GPU's decoders are kept fed).
        Order follows ``locations``, or a shuffle
        reproducible from ``seed``. Every array stays valid while you hold it. A region that cannot be read
        raises its error (naming the batch, item and location) when its batch is reached. ``c``, ``z`` and
        ``t`` choose channels of one plane as :meth:`read_region` does: batches of (B, h, w, C) of the image's
        :attr:`dtype`, read into host memory."""
        kind, index = _gpu.parse_device(device)
        planes = not self._rgb_read(c, z, t)
        if planes and kind != "cpu":
            raise UnsupportedError(f"{self._path}: channels and planes are read into host memory only (device='cpu')")
        if kind == "cuda":
            _gpu.check(index)
        options = _core.BatchOptions()
        options.width, options.height = _pair(size, "size")
        options.level = int(level)
        options.batch_size = int(batch_size)
        options.num_workers = int(num_workers)
        options.prefetch = int(prefetch)
        options.shuffle = bool(shuffle)
        options.seed = int(seed)
        options.drop_last = bool(drop_last)
        options.fill = _fill(fill)
        options.use_cache = bool(use_cache)
        options.cuda_device = index if kind == "cuda" else None
        if planes:
            options.set_planes(_channel_list(c, self._axes[1]), self._default_z if z is None else int(z), int(t))
        return RegionBatches(_core.BatchLoader(self._slide, _locations(locations), options),
                             self.dtype if planes else None)

    # --- arrays ---------------------------------------------------------------------------------
    def zarr(self):
        """The slide as a read-only zarr v3 group with OME-NGFF multiscale metadata: arrays "0", "1", ...
        (h, w, 3) uint8, one chunk per tile (tilewise.zarr; needs zarr>=3)."""
        _extras.require("zarr", "zarr", "Slide.zarr()")
        from .zarr import open_group

        return open_group(self)

    # --- lifecycle ------------------------------------------------------------------------------
    def close(self) -> None:
        self._core = None

    def __enter__(self) -> "Slide":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __reduce__(self):
        if self._file is not None:
            raise TypeError(f"{self._path}: a slide read through a file object cannot be pickled; open it by path")
        return (Slide, (self._path, self._scene) + getattr(self, "_auth", (None, None)))

    def __repr__(self) -> str:
        return f"tilewise.Slide({_shown_path(self._path)!r})"


def open(path: "str | os.PathLike[str] | BinaryIO", scene: Optional[int] = None,  # noqa: A001
         token: Optional[str] = None, headers: Optional[Mapping[str, str]] = None) -> Slide:
    """Opens a slide: a path, a folder of DICOM files, an http(s)://, s3:// or gs:// URL (a folder of a
    DICOM series under an s3:// or gs:// prefix), a DICOMweb series URL, or a binary file object (see Slide);
    ``scene``: which image of a file of several (:attr:`Slide.scenes`) to read; ``token``, ``headers``: the
    credentials of http(s) and DICOMweb requests."""
    return Slide(path, scene, token, headers)
