"""cuCIM's file API (``cucim.clara.filesystem``) on POSIX I/O: ``open`` / ``pread`` / ``pwrite`` / ``close`` into
host buffers. tilewise has no GPUDirect Storage, so ``is_gds_available()`` is False and every handle is a POSIX
(or memory-mapped) one."""

from __future__ import annotations

import enum
import mmap
import os
from typing import Optional, Union

_FLAGS = {"r": os.O_RDONLY, "r+": os.O_RDWR, "w": os.O_RDWR | os.O_CREAT | os.O_TRUNC, "a": os.O_RDWR | os.O_CREAT}


class FileHandleType(enum.IntEnum):
    Unknown = 0
    Posix = 1
    PosixODirect = 2
    MemoryMapped = 4
    GPUDirect = 8


def _host_view(buf, offset: int, count: int) -> memoryview:
    if hasattr(buf, "__cuda_array_interface__") and not hasattr(buf, "__array_interface__"):
        raise TypeError("tilewise.cucim.clara.filesystem reads and writes host buffers only (no GPUDirect Storage)")
    view = memoryview(buf).cast("B")
    if offset < 0 or count < 0 or offset + count > view.nbytes:
        raise ValueError(f"buffer of {view.nbytes} bytes cannot hold {count} bytes at offset {offset}")
    return view[offset:offset + count]


class CuFileDriver:
    """An open file (``filesystem.open(path, flags)``, or ``CuFileDriver(fd)`` over a descriptor)."""

    def __init__(self, fd: int, no_gds: bool = False, use_mmap: bool = False, file_path: str = ""):
        self._fd: Optional[int] = fd
        self._path = file_path or os.path.realpath(f"/proc/self/fd/{fd}")
        self._map: Optional[mmap.mmap] = None
        self.handle_type = FileHandleType.Posix
        if use_mmap:
            size = os.fstat(fd).st_size
            if size:
                self._map = mmap.mmap(fd, size, prot=mmap.PROT_READ)
            self.handle_type = FileHandleType.MemoryMapped

    def pread(self, buf, count: int, file_offset: int, buf_offset: int = 0) -> int:
        """Reads up to ``count`` bytes at ``file_offset`` into ``buf[buf_offset:]``; the bytes read, -1 on error."""
        if self._fd is None:
            return -1
        view = _host_view(buf, buf_offset, count)
        try:
            if self._map is not None:
                data = self._map[file_offset:file_offset + count]
                view[:len(data)] = data
                return len(data)
            done = 0
            while done < count:
                n = os.preadv(self._fd, [view[done:]], file_offset + done)
                if n == 0:
                    break
                done += n
            return done
        except OSError:
            return -1

    def pwrite(self, buf, count: int, file_offset: int, buf_offset: int = 0) -> int:
        """Writes ``count`` bytes of ``buf[buf_offset:]`` at ``file_offset``; the bytes written, -1 on error."""
        if self._fd is None or self._map is not None:
            return -1
        view = _host_view(buf, buf_offset, count)
        try:
            done = 0
            while done < count:
                done += os.pwritev(self._fd, [view[done:]], file_offset + done)
            return done
        except OSError:
            return -1

    def close(self) -> bool:
        if self._fd is None:
            return False
        if self._map is not None:
            self._map.close()
            self._map = None
        os.close(self._fd)
        self._fd = None
        return True

    def __enter__(self) -> "CuFileDriver":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<tilewise.cucim.clara.filesystem.CuFileDriver path:{self._path}>"


def open(file_path: Union[str, "os.PathLike[str]"], flags: str = "r", mode: int = 0o644) -> CuFileDriver:  # noqa: A001
    """cuCIM's flags: "r", "r+", "w", "a", plus "p" (POSIX only), "n" (no O_DIRECT), "m" (memory-mapped,
    read-only). tilewise never uses O_DIRECT (its reads are not aligned to the device block size)."""
    base = flags.replace("p", "").replace("n", "").replace("m", "")
    if base not in _FLAGS:
        raise ValueError(f"flags should be one of {sorted(_FLAGS)}, with 'p', 'n' or 'm' added (got {flags!r})")
    if "m" in flags and base != "r":
        raise ValueError("memory-mapped files ('m') are read-only")
    path = os.fspath(file_path)
    fd = os.open(path, _FLAGS[base] | os.O_CLOEXEC, mode)
    return CuFileDriver(fd, no_gds=True, use_mmap="m" in flags, file_path=os.path.abspath(path))


def pread(fd: CuFileDriver, buf, count: int, file_offset: int, buf_offset: int = 0) -> int:
    return fd.pread(buf, count, file_offset, buf_offset)


def pwrite(fd: CuFileDriver, buf, count: int, file_offset: int, buf_offset: int = 0) -> int:
    return fd.pwrite(buf, count, file_offset, buf_offset)


def close(fd: CuFileDriver) -> bool:
    return fd.close()


def discard_page_cache(file_path: Union[str, "os.PathLike[str]"]) -> bool:
    """Drops the file's pages from the OS page cache (for cold-read measurements)."""
    try:
        fd = os.open(os.fspath(file_path), os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        return True
    finally:
        os.close(fd)


def is_gds_available() -> bool:
    return False
