"""Optional dependencies: the packages behind `tilewise[zarr]` and `tilewise[dask]`, imported where they are
first needed, with an error that says which extra to install when one is missing."""

from __future__ import annotations

import importlib
from types import ModuleType


def require(module: str, extra: str, feature: str) -> ModuleType:
    """`module` imported; when it (or the package it belongs to) is not installed, a ModuleNotFoundError
    naming `feature` and the pip command that installs the `extra`. Errors from inside an installed
    package pass through unchanged."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        package = (e.name or "").split(".")[0]
        if package != module.split(".")[0]:
            raise
        raise ModuleNotFoundError(f"{feature} needs the '{package}' package, which is not installed: "
                                  f"pip install 'tilewise[{extra}]'", name=package) from e
