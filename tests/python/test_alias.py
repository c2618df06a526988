"""Unchanged client programs on tilewise through `TILEWISE_ALIAS` (tilewise/alias.py): openslide-python's
DeepZoom tiler example, large-image's OpenSlide source and MONAI's WSIReader / PatchWSIDataset (both
backends) run as they are, each in its own process, and give the pixels the real libraries give."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import slidegen
import vendor_tiff
from conftest import openslide_python_sdist

pytest.importorskip("openslide")


def run(code_or_args, alias: str = "", timeout: int = 300) -> str:
    """Runs Python code (a string) or a script with arguments (a list) in a fresh interpreter, with
    TILEWISE_ALIAS set to `alias` (unset when empty); its standard output."""
    env = {k: v for k, v in os.environ.items() if k != "TILEWISE_ALIAS"}
    if alias:
        env["TILEWISE_ALIAS"] = alias
    args = ["-c", code_or_args] if isinstance(code_or_args, str) else [str(a) for a in code_or_args]
    done = subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.fixture(scope="module")
def svs(tmp_path_factory) -> Path:
    """An Aperio slide with label, macro and thumbnail, and a thumbnail that carries the slide's profile."""
    from PIL import ImageCms

    path = tmp_path_factory.mktemp("alias") / "slide.svs"
    icc = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()
    vendor_tiff.write_aperio(path, slidegen.tissue_image(1000, 800, seed=13), codec="jpeg-ycbcr", icc=icc,
                             description_extra="|ICC Profile = ScanScope v1")
    return path


def test_the_alias_resolves_every_module_and_is_refused_after_the_real_one():
    out = run("import openslide, openslide.lowlevel, openslide.deepzoom, cucim, cucim.clara.cache\n"
              "print(openslide.__name__, openslide.lowlevel.__name__, openslide.deepzoom.__name__,"
              " cucim.__name__, cucim.clara.cache.__name__)", alias="openslide,cucim")
    assert out.split() == ["tilewise.openslide", "tilewise.openslide.lowlevel", "tilewise.openslide.deepzoom",
                           "tilewise.cucim", "tilewise.cucim.clara.cache"]
    assert run("import openslide; print(openslide.__name__)", alias="all").strip() == "tilewise.openslide"
    assert run("import openslide; print(openslide.__name__)").strip() == "openslide"  # off without the variable
    out = run("import openslide, tilewise.alias\n"
              "try:\n    tilewise.alias.install('openslide')\nexcept RuntimeError as e:\n    print(e)")
    assert "openslide was imported before tilewise.alias.install('openslide')" in out
    with pytest.raises(ValueError, match="no tilewise drop-in for 'tiffslide'"):
        import tilewise.alias

        tilewise.alias.install("tiffslide")


def test_openslide_pythons_deepzoom_tiler_runs_unchanged(tmp_path, svs):
    """examples/deepzoom/deepzoom_tile.py with its viewer (an index page listing the associated images in
    OpenSlide's order, each tiled too) and 2 worker processes: the same files, the same pages, the same
    tiles within the sub-pixel bound."""
    script = openslide_python_sdist() / "examples" / "deepzoom" / "deepzoom_tile.py"
    outputs = {}
    for alias in ("", "openslide"):
        out = tmp_path / (alias or "real")
        run([script, "-r", "-f", "png", "-j", "2", "-o", out, svs], alias=alias)
        outputs[alias] = out
    real, ours = outputs[""], outputs["openslide"]
    files = sorted(p.relative_to(real) for p in real.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(ours) for p in ours.rglob("*") if p.is_file())
    assert len([f for f in files if f.suffix == ".png"]) > 20
    for f in files:
        if f.suffix == ".png":
            a, b = (np.asarray(Image.open(d / f)).astype(int) for d in (real, ours))
            assert a.shape == b.shape and np.abs(a - b).max() <= 3, f
        else:
            assert (real / f).read_bytes() == (ours / f).read_bytes(), f


LARGE_IMAGE = """
import json, sys
import numpy as np
import large_image_source_openslide as source
ts = source.open(sys.argv[1])
meta = ts.getMetadata()
tile = ts.getTile(0, 0, meta["levels"] - 1, numpyAllowed="always")
region, _ = ts.getRegion(region=dict(left=100, top=50, width=300, height=200), output=dict(maxWidth=150),
                         format="numpy")
thumb, _ = ts.getThumbnail(width=128, format="numpy")
label, _ = ts.getAssociatedImage("label", format="numpy")
np.savez(sys.argv[2], tile=tile, region=region, thumb=thumb, label=label)
print(json.dumps([meta, sorted(ts.getAssociatedImagesList()), ts.getInternalMetadata()], sort_keys=True, default=str))
"""


def test_large_image_runs_unchanged(tmp_path, svs):
    pytest.importorskip("large_image_source_openslide")
    script = tmp_path / "client.py"
    script.write_text(LARGE_IMAGE)
    real = json.loads(run([script, svs, tmp_path / "real.npz"]))
    ours = json.loads(run([script, svs, tmp_path / "ours.npz"], alias="openslide"))
    assert ours == real
    a, b = np.load(tmp_path / "real.npz"), np.load(tmp_path / "ours.npz")
    for key in a.files:
        assert a[key].shape == b[key].shape and np.abs(a[key].astype(int) - b[key]).max() <= 2, key


MONAI = """
import sys
import numpy as np
from monai.data import PatchWSIDataset, WSIReader
path, out, backend = sys.argv[1], sys.argv[2], sys.argv[3]
arrays = {}
reader = WSIReader(backend=backend)
wsi = reader.read(path)
for level, location in ((0, (40, 60)), (1, (200, 240))):  # (top, left), inside, on the level's grid
    patch, meta = reader.get_data(wsi, location=location, size=(96, 128), level=level)
    arrays[f"get-{level}"] = np.asarray(patch)
# Centred patches (MONAI's default), on the slide's top and left borders too, where their corners are
# negative; at level 1 most corners fall between the level's pixels (downsample 4).
centres = [(500, 400), (0, 0), (501, 3), (7, 401), (301, 0), (2, 410)]
data = [{"image": path, "location": [y, x], "label": 0} for x, y in centres]
for level in (0, 1):
    for i, item in enumerate(PatchWSIDataset(data, patch_size=(96, 128), patch_level=level, reader=backend)):
        arrays[f"patch-{level}-{i}"] = np.asarray(item["image"])
np.savez(out, **arrays)
"""


def test_monai_runs_unchanged_on_both_backends(tmp_path, svs):
    """The OpenSlide backend through the alias against the real OpenSlide (border patches included); the
    cuCIM backend through the alias against the real OpenSlide where both read the level's own pixels (the
    grid-aligned reads; cuCIM and OpenSlide place a fractional or negative location differently). Patches
    over the level's right or bottom edge at a fractional position are left to test_compat_openslide's
    premultiplied bound: OpenSlide's alpha is partial there, which MONAI drops, and the un-premultiplied
    colour of a faint pixel magnifies pixman's rounding."""
    pytest.importorskip("monai")
    script = tmp_path / "client.py"
    script.write_text(MONAI)
    run([script, svs, tmp_path / "real.npz", "openslide"])
    run([script, svs, tmp_path / "ours.npz", "openslide"], alias="openslide")
    run([script, svs, tmp_path / "cucim.npz", "cucim"], alias="cucim")
    real, ours, cucim = (np.load(tmp_path / f"{n}.npz") for n in ("real", "ours", "cucim"))
    assert sorted(real.files) == sorted(ours.files) and len(real.files) == 14
    for key in real.files:
        assert real[key].shape == ours[key].shape and np.abs(real[key].astype(int) - ours[key]).max() <= 2, key
    for key in ("get-0", "get-1", "patch-0-0", "patch-1-0"):
        assert np.array_equal(cucim[key], real[key]), key
