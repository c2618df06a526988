"""Finding the GPU libraries and describing device arrays.

nvImageCodec 0.8 comes from the nvidia-nvimgcodec-cu13 wheel, nvJPEG and nvJPEG2000 from nvidia-nvjpeg and
nvidia-nvjpeg2k-cu13 (or the CUDA toolkit). They are located in site-packages on first use: nvJPEG/nvJPEG2000
are preloaded globally so that nvImageCodec's extensions find them, and the core is told where
libnvimgcodec.so.0 is.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
from typing import Optional, Tuple

from . import _core
from .errors import InvalidArgumentError

_configured = False


def _package_dir(name: str) -> Optional[str]:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return list(spec.submodule_search_locations)[0]


def configure() -> None:
    global _configured
    if _configured:
        return
    _configured = True
    for package, library in (("nvidia.nvjpeg", "libnvjpeg.so.13"), ("nvidia.nvjpeg2k", "libnvjpeg2k.so.0")):
        folder = _package_dir(package)
        if folder:
            path = os.path.join(folder, "lib", library)
            if os.path.exists(path):
                try:
                    ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
                except OSError:
                    pass
    folder = os.environ.get("TILEWISE_NVIMGCODEC_DIR") or _package_dir("nvidia.nvimgcodec")
    if folder:
        _core.set_nvimgcodec_directory(folder)


def parse_device(device) -> Tuple[str, int]:
    """("cpu", 0) or ("cuda", index) from "cpu", "cuda", "cuda:N" or a torch/cupy-style device object; "cuda"
    alone is the calling thread's current device, as in PyTorch and CuPy (a DDP rank's, after
    ``torch.cuda.set_device``)."""
    text = str(device) if device is not None else "cpu"
    if text == "cpu":
        return "cpu", 0
    if text == "cuda":
        return "cuda", _core.current_cuda_device()
    if text.startswith("cuda:") and text[5:].isdigit():
        return "cuda", int(text[5:])
    raise InvalidArgumentError(f"unknown device {device!r} (use 'cpu', 'cuda' or 'cuda:N')")


def check(index: int) -> None:
    """Raises InvalidArgumentError (no such device) or UnsupportedError (no usable GPU) with the reason."""
    configure()
    status = _core.gpu_status(index)
    if status.code == _core.StatusCode.INVALID_ARGUMENT:
        status.raise_if_error(f"device cuda:{index}")
    status.raise_if_error(f"device cuda:{index} is not available")


class DeviceArray:
    """An (H, W, C) array in GPU memory: (H, W, 3) uint8 for RGB reads, the image's sample type for channels.
    cupy, torch and jax take it without a copy through ``__dlpack__`` or ``__cuda_array_interface__``. Stream semantics: the data is complete when the read
    returns (tilewise synchronises its own stream), so any stream may use it at once; ``stream`` arguments
    are accepted and need no synchronisation."""

    def __init__(self, buffer: "_core.DeviceBuffer", shape: Optional[Tuple[int, ...]] = None):
        self._buffer = buffer
        # A different shape of the same contiguous bytes (e.g. one region of a batch of one).
        self._shape = tuple(shape) if shape is not None else None

    def reshaped(self, shape: Tuple[int, ...]) -> "DeviceArray":
        """The same device bytes with another shape of the same size (no copy)."""
        return DeviceArray(self._buffer, shape)

    @property
    def shape(self):
        return self._shape if self._shape is not None else tuple(self._buffer.shape)

    @property
    def dtype(self):
        import numpy as np

        return np.dtype(self._buffer.dtype)

    @property
    def device(self) -> str:
        return f"cuda:{self._buffer.device}"

    def __dlpack__(self, *args, **kwargs):
        if self._shape is not None and self._shape != tuple(self._buffer.shape):
            raise BufferError("this view of a device buffer is shared through __cuda_array_interface__ only")
        return self._buffer.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self._buffer.__dlpack_device__()

    @property
    def __cuda_array_interface__(self) -> dict:
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self._buffer.ptr, False), "strides": None,
                "version": 3, "stream": None}

    def __repr__(self) -> str:
        return f"tilewise.DeviceArray(shape={self.shape}, device={self.device!r})"
