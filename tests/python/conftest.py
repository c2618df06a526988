"""Shared fixtures: generated slides (deterministic, small) and the real fixtures in ../shared/testdata."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "data"))

import slidegen  # noqa: E402

SHARED = REPO.parent / "shared" / "testdata"


def _load_cucim_before_torch() -> None:
    """cuCIM (the oracle of tilewise.cucim) loads its plugin library at the first image it opens, and that runs
    GPUDirect Storage's cuFileDriverOpen when a libcufile is loaded - and torch (test_torch.py) loads its own.
    On a machine without an NVIDIA driver that call never returns, so the session loads cuCIM's plugin here,
    before any test module imports torch: it then finds no libcufile and carries on."""
    try:
        import cucim
        import tempfile

        import tifffile
    except ImportError:
        return
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "tiny.tif"
        tifffile.imwrite(path, np.zeros((16, 16, 3), np.uint8), tile=(16, 16), photometric="rgb")
        cucim.CuImage(str(path)).read_region((0, 0), (4, 4))


_load_cucim_before_torch()


def shared_file(name: str) -> Path:
    """A real fixture from ../shared/testdata, or a visible skip when that folder is absent (a user's clone)."""
    path = SHARED / name
    if not path.exists():
        pytest.skip(f"{path} is not available (../shared/testdata is only present in the project's CI and dev machines)")
    return path


@pytest.fixture(scope="session")
def tissue() -> np.ndarray:
    """A 1000 x 744 procedural tissue image (edges are not tile multiples)."""
    return slidegen.tissue_image(1000, 744, seed=3)


@pytest.fixture(scope="session")
def slide_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("slides")


@pytest.fixture(scope="session")
def vips_jpeg_slide(slide_dir, tissue) -> Path:
    """libvips pyramid, JPEG q80 with shared JPEGTables, 256 x 256 tiles; level sizes exact halves."""
    path = slide_dir / "vips_jpeg.tif"
    image = slidegen.tissue_image(2048, 1536, seed=5)
    slidegen.write_vips_pyramid(path, image, quality=80)
    return path


def assert_same(actual: np.ndarray, expected: np.ndarray, what: str = "") -> None:
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    if not np.array_equal(actual, expected):
        diff = np.abs(actual.astype(int) - expected.astype(int))
        ys, xs = np.nonzero(diff.max(axis=-1))
        raise AssertionError(f"{what}: {len(ys)} pixels differ (max {diff.max()}), first at x={xs[0]}, y={ys[0]}")


def openslide_python_sdist() -> Path:
    """The source tree of the installed openslide-python (its tests, fixtures and examples), downloaded from
    PyPI once into build/compat/ (tests/compat/run_openslide_suite.sh uses the same tree)."""
    import importlib.metadata
    import subprocess
    import tarfile

    version = importlib.metadata.version("openslide-python")
    tree = REPO / "build" / "compat" / f"openslide_python-{version}"
    if not (tree / "examples").is_dir():
        archive = tree.parent / f"openslide_python-{version}.tar.gz"
        if not archive.exists():
            subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
                            "-d", str(tree.parent), f"openslide-python=={version}"], check=True)
        with tarfile.open(archive) as t:
            # The "data" filter where this Python has it (3.11.4 and later): PyPI's sdist is trusted either way.
            t.extractall(tree.parent, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    return tree
