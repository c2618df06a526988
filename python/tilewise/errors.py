"""Exceptions raised by tilewise.

Every error from the core is a :class:`TilewiseError`; each subclass also derives from the built-in exception
a Python user would expect (``ValueError`` for bad arguments, ``FileNotFoundError`` for missing files, ...).
The extension (python/src/errors.cc) maps core status codes to these classes.
"""


class TilewiseError(Exception):
    """Base class of every tilewise error."""


class InvalidArgumentError(TilewiseError, ValueError):
    """The request is impossible (bad level, negative size, ...)."""


class NotFoundError(TilewiseError, FileNotFoundError):
    """No such file, associated image or property."""


class UnsupportedError(TilewiseError):
    """A file or feature tilewise does not read."""


class CorruptError(TilewiseError):
    """The file violates its format; the message names the file, level and tile."""


class IoError(TilewiseError, OSError):
    """The operating system failed a read."""


class OutOfMemoryError(TilewiseError, MemoryError):
    """An allocation or a configured size limit was exceeded."""


class InternalError(TilewiseError):
    """A bug in tilewise."""


__all__ = [
    "TilewiseError",
    "InvalidArgumentError",
    "NotFoundError",
    "UnsupportedError",
    "CorruptError",
    "IoError",
    "OutOfMemoryError",
    "InternalError",
]
