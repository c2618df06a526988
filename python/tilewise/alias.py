"""Unchanged programs on tilewise: ``import openslide`` and ``import cucim`` resolve to tilewise's drop-in
modules (``tilewise.openslide``, ``tilewise.cucim``) and every module under them (``openslide.lowlevel``,
``openslide.deepzoom``, ``cucim.clara.cache``, ...).

Any program, without changing it (the wheel installs a ``tilewise-alias.pth`` that reads the variable
when Python starts; child processes inherit it, so DataLoader and dask workers do the same)::

    TILEWISE_ALIAS=openslide,cucim python app.py

Or, first thing in a program, before anything imports openslide or cucim::

    import tilewise.alias
    tilewise.alias.install("openslide", "cucim")

Installing over a module already imported (the real openslide, say) is refused: parts of the program
would hold the other library's objects.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import sys
from types import ModuleType
from typing import Dict, Iterator, Tuple

__all__ = ["install", "install_from_environment", "NAMES"]

# The name programs import, and tilewise's module that stands in for it.
NAMES: Dict[str, str] = {"openslide": "tilewise.openslide", "cucim": "tilewise.cucim"}
ENVIRONMENT_VARIABLE = "TILEWISE_ALIAS"


def _modules(name: str) -> Iterator[Tuple[str, ModuleType]]:
    """(alias, module) for the drop-in package and each module under it."""
    package = importlib.import_module(NAMES[name])
    yield name, package
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        yield name + info.name[len(package.__name__):], importlib.import_module(info.name)


def install(*names: str) -> None:
    """Makes each of `names` ("openslide", "cucim"; both when none is given) importable as tilewise's
    drop-in. RuntimeError when the real module was imported first; ValueError for another name."""
    for name in names or tuple(NAMES):
        if name not in NAMES:
            raise ValueError(f"no tilewise drop-in for {name!r}: choose from {', '.join(NAMES)}")
        for alias, module in _modules(name):
            current = sys.modules.get(alias)
            if current is not None and current is not module:
                raise RuntimeError(f"{alias} was imported before tilewise.alias.install({name!r}): install the "
                                   f"alias first, or set {ENVIRONMENT_VARIABLE}={name} in the environment")
            sys.modules[alias] = module


def install_from_environment() -> None:
    """install() of the comma-separated names in TILEWISE_ALIAS ("all" for every drop-in); nothing when
    it is unset or empty. Called at interpreter start by tilewise-alias.pth."""
    value = os.environ.get(ENVIRONMENT_VARIABLE, "").strip()
    if not value:
        return
    names = tuple(NAMES) if value == "all" else tuple(n.strip() for n in value.split(",") if n.strip())
    install(*names)
