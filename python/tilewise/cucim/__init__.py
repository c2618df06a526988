"""cuCIM compatibility: ``from tilewise.cucim import CuImage`` runs code written for ``from cucim import CuImage``.

Same shapes, dtypes, errors (``ValueError``), metadata keys, iterator semantics and out-of-bounds fill (black
for generic TIFF, white for Aperio and Philips), read through tilewise. Differences, by design:

- Several locations with ``num_workers=0`` are read (cuCIM raises).
- Iterators never free arrays already handed out (cuCIM's does).
- Stripped TIFFs and images whose pixels are not three samples (grey, RGBA) take cuCIM's "slow path" as in
  cuCIM (the stderr warning at the first read, RGBA regions and shapes, out-of-bounds regions refused; an RGBA
  file's alpha with its colours premultiplied by it, as libtiff's RGBA interface gives them to cuCIM).
- Like cuCIM, tilewise.cucim starts without a tile cache: the first ``CuImage`` or ``CuImage.cache()`` turns
  tilewise's process-wide tile cache off (unless ``TILEWISE_CACHE_BYTES`` configured it) until
  ``CuImage.cache("per_process", ...)`` turns it on. ``"shared_memory"`` moves it into shared memory
  (``tilewise.set_shared_cache``): DataLoader workers forked afterwards share decoded tiles, and a worker
  that asks for the same shared cache again keeps sharing its parent's.
- ``device="cuda"``/``"cuda:N"`` regions and batches are read through tilewise's GPU path; they expose
  ``__cuda_array_interface__`` (``cupy.asarray(region)``) and, except single regions of an iterator,
  ``__dlpack__``. Without a usable GPU, ``UnsupportedError`` says why (an unknown device: ``ValueError``).
"""

from __future__ import annotations

import enum
import os
import sys
from typing import Iterator, List, Optional, Sequence

import numpy as np

from .. import _core, _gpu
from ..errors import TilewiseError
from ..slide import RegionBatches, Slide, _locations

from ._cache import CacheType, ImageCache, apply_default, cache, preferred_memory_capacity

__all__ = ["CuImage", "CuImageIterator", "DLDataType", "DLDataTypeCode", "preferred_memory_capacity", "cache",
           "CacheType", "ImageCache", "is_available"]


# cuCIM's module flags: tilewise provides cuCIM's image I/O (``clara``, the ``CuImage`` API), not its CuPy-based
# image processing (``skimage``, ``core``), so the flag that gates those is off.
_is_clara_available = True
_is_cupy_available = False


def is_available(module_name: str = "") -> bool:
    """cuCIM's module check: "clara" (image I/O), "skimage" / "core" (image processing), or, for any other
    name, whether all of cuCIM is there."""
    if module_name in ("skimage", "core"):
        return bool(_is_cupy_available)
    if module_name == "clara":
        return bool(_is_clara_available)
    return bool(_is_cupy_available and _is_clara_available)


class Profiler:
    """``CuImage.profiler()``: cuCIM's trace switch. tilewise records no traces; the switch is kept so code
    that sets and reads it runs unchanged."""

    def __init__(self, trace: Optional[bool] = None):
        if trace is not None:
            self.trace(trace)

    def trace(self, value: Optional[bool] = None) -> bool:
        if value is not None:
            CuImage.is_trace_enabled = bool(value)
        return CuImage.is_trace_enabled

    @property
    def config(self) -> dict:
        return {"trace": CuImage.is_trace_enabled}


class DLDataTypeCode(enum.IntEnum):
    DLInt = 0
    DLUInt = 1
    DLFloat = 2
    DLBfloat = 4


class DLDataType:
    """DLPack data type, compared by (code, bits, lanes) as cuCIM's is."""

    __slots__ = ("code", "bits", "lanes")

    def __init__(self, code: DLDataTypeCode = DLDataTypeCode.DLUInt, bits: int = 8, lanes: int = 1):
        self.code, self.bits, self.lanes = DLDataTypeCode(code), int(bits), int(lanes)

    def __eq__(self, other) -> bool:
        return isinstance(other, DLDataType) and (self.code, self.bits, self.lanes) == (other.code, other.bits, other.lanes)

    def __hash__(self) -> int:
        return hash((int(self.code), self.bits, self.lanes))

    def __repr__(self) -> str:
        return f"<tilewise.cucim.DLDataType code:{self.code.name}({int(self.code)}) bits:{self.bits} lanes:{self.lanes}>"


_UINT8 = DLDataType(DLDataTypeCode.DLUInt, 8, 1)


class DeviceType(enum.IntEnum):
    CPU = 1
    CUDA = 2
    CUDAHost = 3
    CUDAManaged = 13
    CPUShared = 101
    CUDAShared = 102


class Device:
    """The device of an image or region; ``str()`` is "cpu" or "cuda:N"."""

    def __init__(self, name: str = "cpu"):
        self._name = name

    @staticmethod
    def parse_type(name: str) -> DeviceType:
        return DeviceType.CUDA if str(name).startswith("cuda") else DeviceType.CPU

    @property
    def type(self) -> DeviceType:
        return Device.parse_type(self._name)

    @property
    def index(self) -> int:
        return int(self._name.split(":")[1]) if ":" in self._name else (0 if self._name == "cuda" else -1)

    def __str__(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return self._name

    def __eq__(self, other) -> bool:
        return isinstance(other, Device) and other._name == self._name


def _check_device(device) -> Device:
    """Device("cpu") or Device("cuda[:N]") after checking that the GPU can be used (tilewise's errors:
    InvalidArgumentError (a ValueError) for an unknown device, UnsupportedError without a usable GPU)."""
    kind, index = _gpu.parse_device(device)
    if kind == "cpu":
        return Device("cpu")
    _gpu.check(index)
    return Device("cuda" if str(device) == "cuda" else f"cuda:{index}")


def _spacing(props) -> tuple:
    """(spacing x, spacing y, units) from the TIFF resolution tags, as cuCIM reports them: micrometres for
    centimetre and inch units, computed in float32 as cuCIM does (libtiff's resolutions are floats); with
    unit "none", the resolution values themselves and no unit; without the tags, 1 and no unit."""
    unit = props.get("tiff.ResolutionUnit", "")
    xres, yres = props.get("tiff.XResolution"), props.get("tiff.YResolution")
    if not xres or not yres or float(xres) <= 0 or float(yres) <= 0:
        return 1.0, 1.0, ""
    x, y = np.float32(xres), np.float32(yres)
    per = {"centimeter": 1e4, "inch": 25400.0}.get(unit)
    if per:
        return float(np.float32(per / x)), float(np.float32(per / y)), "micrometer"
    return float(x), float(y), ""


class CuImage:
    """A slide (``CuImage(path)``) or a region read from one (returned by ``read_region``)."""

    def __init__(self, path: "str | os.PathLike[str] | None" = None, *args, **kwargs):
        self._array: Optional[np.ndarray] = None  # a region's pixels: numpy, or a _gpu.DeviceArray on a GPU
        self._device = Device("cpu")
        self._slide: Optional[Slide] = None
        self._path = "" if path is None else os.fspath(path)
        self._dims = "YXC"
        self._region_spacing = (1.0, 1.0, "")
        if path is None:
            return
        apply_default()
        # cuCIM opens local paths only; remote slides (http(s)://, s3://, gs://, DICOMweb series) are tilewise's
        if "://" not in self._path and not os.path.exists(self._path):
            raise ValueError(f"Cannot open {self._path}!")
        try:
            self._slide = Slide(self._path)
        except TilewiseError as e:
            raise ValueError(f"Cannot open {self._path}! ({e})") from e
        self._warned_slow_path = False

    @property
    def _slow_path(self) -> bool:
        """cuCIM reads tiled three-sample images itself and everything else through libtiff's RGBA interface."""
        return self._slide is not None and (not self._slide.is_tiled(0) or self._slide.samples_per_pixel(0) != 3)

    @classmethod
    def _region(cls, array, path: str, dims: str, device: Device = Device("cpu"),
                spacing: tuple = (1.0, 1.0, "")) -> "CuImage":
        region = cls.__new__(cls)
        region._array, region._slide, region._path, region._dims, region._device = array, None, path, dims, device
        region._region_spacing = spacing
        return region

    def _level_spacing(self, level: int) -> tuple:
        """What cuCIM reports as a region's spacing: the image's, divided by the level's downsample (cuCIM's
        numbers, though a zoomed-out pixel is physically larger)."""
        sx, sy, unit = _spacing(self._slide.properties)
        ds = float(np.float32(self._slide.levels[level].downsample))
        return (float(np.float32(sx / ds)), float(np.float32(sy / ds)), unit) if ds != 1.0 else (sx, sy, unit)

    def _own_spacing(self) -> tuple:
        return _spacing(self._slide.properties) if self._slide is not None else self._region_spacing

    def _on_gpu(self) -> bool:
        return self._array is not None and str(self._device) != "cpu"

    # --- pickling (slides re-open themselves; regions carry their pixels) ------------------------
    def __reduce__(self):
        if self._slide is not None:
            return (CuImage, (self._path,))
        if self._on_gpu():
            raise TypeError("a region in GPU memory cannot be pickled (read it with device='cpu')")
        return (CuImage._region, (self._array, self._path, self._dims, Device("cpu"), self._region_spacing))

    # --- basic properties ----------------------------------------------------------------------
    @property
    def path(self) -> str:
        return self._path

    @property
    def is_loaded(self) -> bool:
        return self._slide is not None or self._array is not None

    @property
    def device(self) -> Device:
        return self._device

    @property
    def ndim(self) -> int:
        return len(self._dims)

    @property
    def dims(self) -> str:
        return self._dims

    @property
    def shape(self) -> List[int]:
        if self._array is not None:
            return list(self._array.shape)
        w, h = self._slide.dimensions
        # cuCIM reports RGBA for images it must read through libtiff's RGBA path, except stripped RGB ones
        return [h, w, 3 if self._slide.samples_per_pixel(0) == 3 else 4]

    @property
    def dtype(self) -> DLDataType:
        return _UINT8

    @property
    def typestr(self) -> str:
        return "|u1"

    @property
    def channel_names(self) -> List[str]:
        return ["R", "G", "B", "A"] if self.shape[-1] == 4 else ["R", "G", "B"]

    @property
    def coord_sys(self) -> str:
        return "LPS"

    @property
    def origin(self) -> List[float]:
        return [0.0, 0.0, 0.0]

    @property
    def direction(self) -> List[List[float]]:
        return [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]

    def _by_dim(self, values: dict, dim_order: str) -> list:
        order = dim_order or self._dims
        return [values[d] for d in order]

    def size(self, dim_order: str = "") -> List[int]:
        shape = self.shape
        return self._by_dim(dict(zip(self._dims, shape)), dim_order)

    def spacing(self, dim_order: str = "") -> List[float]:
        sx, sy, _ = self._own_spacing()
        return self._by_dim({"X": sx, "Y": sy, "C": 1.0, "N": 1.0}, dim_order)

    def spacing_units(self, dim_order: str = "") -> List[str]:
        unit = self._own_spacing()[2]
        return self._by_dim({"X": unit, "Y": unit, "C": "color", "N": "batch"}, dim_order)

    @property
    def resolutions(self) -> dict:
        if self._slide is None:
            h, w = self._array.shape[-3:-1]
            return {"level_count": 1, "level_dimensions": ((w, h),), "level_downsamples": (1.0,),
                    "level_tile_sizes": ((w, h),)}
        levels = self._slide.levels
        return {
            "level_count": len(levels),
            "level_dimensions": tuple(lv.dimensions for lv in levels),
            # cuCIM keeps downsamples as float32
            "level_downsamples": tuple(float(np.float32(lv.downsample)) for lv in levels),
            # cuCIM has no tile size for strip-based levels
            "level_tile_sizes": tuple(lv.tile_size if self._slide.is_tiled(i) else (0, 0)
                                      for i, lv in enumerate(levels)),
        }

    @property
    def associated_images(self) -> set:
        return set(self._slide.associated_images) if self._slide is not None else set()

    def associated_image(self, name: str, device="cpu") -> "CuImage":
        _check_device(device)
        if self._slide is None or name not in self._slide.associated_images:
            raise ValueError(f"Associated image '{name}' does not exist!")
        return CuImage._region(self._slide.associated_images[name], self._path, "YXC")

    @property
    def raw_metadata(self) -> str:
        if self._slide is None:
            return ""
        return self._slide.properties.get("tiff.ImageDescription", "")

    @property
    def metadata(self) -> dict:
        res = self.resolutions
        sx, sy, unit = self._own_spacing()
        meta = {
            "cucim": {
                "associated_images": sorted(self.associated_images),
                "channel_names": self.channel_names,
                "coord_sys": self.coord_sys,
                "dims": self._dims,
                "direction": self.direction,
                "dtype": {"bits": 8, "code": 1, "lanes": 1},
                "ndim": self.ndim,
                "origin": self.origin,
                "path": self._path,
                "resolutions": {
                    "level_count": res["level_count"],
                    "level_dimensions": [list(d) for d in res["level_dimensions"]],
                    "level_downsamples": list(res["level_downsamples"]),
                    "level_tile_sizes": [list(t) for t in res["level_tile_sizes"]],
                },
                "shape": self.shape,
                "spacing": [sy, sx, 1.0] if self._dims == "YXC" else [1.0, sy, sx, 1.0],
                "spacing_units": [unit, unit, "color"] if self._dims == "YXC" else ["batch", unit, unit, "color"],
                "typestr": self.typestr,
            }
        }
        if self._slide is None:
            return meta
        props = self._slide.properties
        has_resolution = "tiff.XResolution" in props
        unit = props.get("tiff.ResolutionUnit", "") if has_resolution else ""
        meta["tiff"] = {
            "model": props.get("tiff.Model", ""),
            "resolution_unit": "" if unit == "none" else unit,
            "software": props.get("tiff.Software", ""),
            "x_resolution": float(props.get("tiff.XResolution", 1.0)),
            "y_resolution": float(props.get("tiff.YResolution", 1.0)),
        }
        vendor = self._slide.format
        if vendor in ("aperio", "philips"):
            prefix = vendor + "."
            meta[vendor] = {k[len(prefix):]: v for k, v in props.items() if k.startswith(prefix)}
            if vendor == "aperio":
                description = props.get("tiff.ImageDescription", "")
                meta["aperio"]["Header"] = description.split("|", 1)[0]
                # A key the description repeats keeps its first value in cuCIM (tilewise's properties, like
                # OpenSlide's, keep the last).
                first = {}
                for field in description.split("|")[1:]:
                    key, sep, value = field.partition(" = ")
                    if sep:
                        first.setdefault(key.strip(), value.strip())
                meta["aperio"].update({k: v for k, v in first.items() if k in meta["aperio"]})
        return meta

    # --- pixels --------------------------------------------------------------------------------
    def _fill(self) -> tuple:
        return (255, 255, 255) if self._slide.format in ("aperio", "philips") else (0, 0, 0)

    def read_region(self, location=(), size=(), level: int = 0, num_workers: int = 0, batch_size: int = 1,
                    drop_last: bool = False, prefetch_factor: int = 2, shuffle: bool = False, seed: int = 0,
                    device="cpu", buf=None, shm_name: str = "", **kwargs):
        """Reads one region (a ``CuImage``) or, for several locations or ``batch_size > 1``, returns a
        ``CuImageIterator`` over regions or batches, as cuCIM does."""
        if self._slide is None:
            raise ValueError("read_region needs an image opened from a file")
        dev = _check_device(device)
        levels = self._slide.levels
        if not isinstance(level, (int, np.integer)) or level < 0 or level >= len(levels):
            raise ValueError(f"'level' should be less than {len(levels)}")
        if size is None or len(size) == 0:
            size = levels[level].dimensions
        w, h = int(size[0]), int(size[1])
        for v in (w, h):
            if v <= 0:
                raise ValueError(f"Invalid size ({v}) in the request! (Should be > 0)")
        # cuCIM bounds a region by the original (level 0) image, at every level
        width, height = levels[0].dimensions
        if w > width:
            raise ValueError(f"Invalid size (it exceeds the original image width {width})")
        if h > height:
            raise ValueError(f"Invalid size (it exceeds the original image height {height})")
        if location is None or len(location) == 0:
            location = (0, 0)
        locs = _locations(location)
        if len(locs) == 1 and batch_size == 1:
            x, y = (int(v) for v in locs[0])
            if self._slow_path and dev == Device("cpu"):
                return self._read_slow_path(x, y, w, h, int(level))
            array = self._slide.read_region((x, y), (w, h), level=int(level), fill=self._fill(), device=str(dev), c="rgb")
            return CuImage._region(array, self._path, "YXC", dev, self._level_spacing(int(level)))
        batches = self._slide.read_regions(locs, (w, h), level=int(level), batch_size=int(batch_size),
                                           num_workers=int(num_workers), prefetch=max(1, int(prefetch_factor)),
                                           shuffle=bool(shuffle), seed=int(seed), drop_last=bool(drop_last),
                                           device=str(dev), fill=self._fill())
        return CuImageIterator(batches, self._path, batch_size, dev, self._level_spacing(int(level)))

    def _read_slow_path(self, x: int, y: int, w: int, h: int, level: int) -> "CuImage":
        """cuCIM's slow path for stripped TIFFs: RGBA pixels (a file's alpha, its colours premultiplied by it
        as libtiff's RGBA interface gives them; opaque without alpha), regions that leave
        the image refused, and a warning on stderr at the image's first read (cuCIM reads such files through
        libtiff's RGBA interface and says so)."""
        if not self._warned_slow_path:
            self._warned_slow_path = True
            print(f"[Warning] Loading image('{self._path}') with a slow-path. The pixel format of the loaded "
                  "image would be RGBA (4 channels) instead of RGB!", file=sys.stderr, flush=True)
        ds = self._slide.levels[level].downsample
        lw, lh = self._slide.levels[level].dimensions
        lx, ly = int(x / ds), int(y / ds)
        if lx < 0 or ly < 0 or lx + w > lw or ly + h > lh:
            raise ValueError("Cannot handle the out-of-boundary cases.")
        rgb = self._slide.read_region((x, y), (w, h), level=level, c="rgb")
        alpha = np.full((h, w), 255, np.uint8)
        info = self._slide._slide.levels[level]
        if info.alpha_sample >= 0:  # libtiff's RGBA interface: unassociated alpha premultiplied, (v * a + 127) / 255
            alpha = self._slide._slide.read_level_alpha(level, lx, ly, w, h)
            if not info.alpha_associated:
                rgb = ((rgb.astype(np.uint16) * alpha[..., None] + 127) // 255).astype(np.uint8)
        return CuImage._region(np.dstack([rgb, alpha]), self._path, "YXC", spacing=self._level_spacing(level))

    def __iter__(self) -> Iterator["CuImage"]:
        """cuCIM iterates a single image as a sequence of itself, so code that loops over what read_region
        returned works whether it got one region or an iterator."""
        yield self

    # --- array protocols (regions) ---------------------------------------------------------------
    @property
    def __array_interface__(self) -> dict:
        if self._array is None:
            raise AttributeError("__array_interface__ is available on regions, not on the whole image")
        if self._on_gpu():
            raise AttributeError("the region is in GPU memory: use __cuda_array_interface__ (cupy.asarray)")
        return self._array.__array_interface__

    @property
    def __cuda_array_interface__(self) -> dict:
        if not self._on_gpu():
            raise AttributeError("__cuda_array_interface__ is available on regions read with device='cuda'")
        return self._array.__cuda_array_interface__

    def __dlpack__(self, *args, **kwargs):
        if not self._on_gpu():
            raise BufferError("__dlpack__ is available on regions read with device='cuda'")
        return self._array.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        if not self._on_gpu():
            raise BufferError("__dlpack_device__ is available on regions read with device='cuda'")
        return self._array.__dlpack_device__()

    def __array__(self, dtype=None, copy=None):
        if self._array is None:
            raise ValueError("read a region first (CuImage.read_region)")
        if self._on_gpu():
            raise TypeError("the region is in GPU memory: use cupy.asarray(region) or torch.as_tensor(region)")
        return self._array if dtype is None else self._array.astype(dtype)

    def save(self, file_path: str) -> None:
        """Saves a region as .ppm (as cuCIM does), or any format PIL knows from the extension."""
        if self._on_gpu():
            raise ValueError("a region in GPU memory cannot be saved (read it with device='cpu')")
        if self._array is None or self._array.ndim != 3:
            raise ValueError("only a single (H, W, C) region can be saved")
        path = os.fspath(file_path)
        if path.lower().endswith(".ppm"):
            h, w = self._array.shape[:2]
            with open(path, "wb") as f:
                f.write(f"P6\n{w} {h}\n255\n".encode())
                f.write(np.ascontiguousarray(self._array).tobytes())
            return
        from PIL import Image

        Image.fromarray(self._array).save(path)

    # --- lifecycle -----------------------------------------------------------------------------
    def close(self) -> None:
        if self._slide is not None:
            self._slide.close()

    def __enter__(self) -> "CuImage":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<tilewise.cucim.CuImage path={self._path!r} shape={self.shape} dims={self._dims}>"

    @staticmethod
    def cache(type=None, **kwargs) -> "ImageCache":  # noqa: A002 - cuCIM's argument name
        """The tile cache; with arguments, reconfigures it (see the module notes)."""
        return cache(type, **kwargs)

    @staticmethod
    def device_cache(**kwargs) -> "ImageCache":
        """As in cuCIM, a view of the same cache as ``cache()`` (tilewise's device tile cache follows it)."""
        return cache(None, **kwargs)

    @staticmethod
    def profiler(**kwargs) -> Profiler:
        return Profiler(**kwargs)

    is_trace_enabled = False  # cuCIM's static property (tilewise records no traces; see Profiler)


class CuImageIterator:
    """Regions (batch_size 1: (H, W, C)) or batches ((N, H, W, C)) of a multi-location read."""

    def __init__(self, batches: RegionBatches, path: str, batch_size: int, device: Device = Device("cpu"),
                 spacing: tuple = (1.0, 1.0, "")):
        self._batches, self._path, self._batch_size, self._device = batches, path, batch_size, device
        self._spacing = spacing

    def __len__(self) -> int:
        return len(self._batches)

    def __iter__(self) -> Iterator[CuImage]:
        return self

    def __next__(self) -> CuImage:
        pixels = next(self._batches)
        if self._batch_size != 1:
            return CuImage._region(pixels, self._path, "NYXC", self._device, self._spacing)
        if isinstance(pixels, _gpu.DeviceArray):
            return CuImage._region(pixels.reshaped(pixels.shape[1:]), self._path, "YXC", self._device, self._spacing)
        return CuImage._region(pixels[0], self._path, "YXC", spacing=self._spacing)


from . import clara  # noqa: E402 - cuCIM's module layout (cucim.clara, cucim.clara.cache, ...), built on the above
