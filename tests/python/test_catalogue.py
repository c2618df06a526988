"""The corruption catalogue (tests/data/catalogue.py) through the Python API: every damaged file opens or
fails with a tilewise error naming it, exactly as its entry expects; nothing crashes."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

import catalogue
import tilewise


@pytest.fixture(scope="module")
def entries(tmp_path_factory):
    out = tmp_path_factory.mktemp("catalogue")
    return out, catalogue.build(out)


def outcome(path: Path):
    """('open-fails'|'read-fails'|'reads', message)."""
    try:
        slide = tilewise.open(path)
    except tilewise.TilewiseError as e:
        return "open-fails", str(e)
    errors = []
    t_size, _, z_size = slide.shape()[:3]
    planes = [(0, 0)] if slide.is_rgb else [(z, t) for t in range(t_size) for z in range(z_size)]
    for level, lv in enumerate(slide.levels):
        for z, t in planes:  # every channel of every plane
            try:
                slide.read_region((0, 0), lv.dimensions, level=level, z=z, t=t)
            except tilewise.TilewiseError as e:
                errors.append(str(e))
    for name in slide.associated_images:
        try:
            slide.associated_images[name]
        except tilewise.TilewiseError as e:
            errors.append(str(e))
    return ("read-fails", errors[0]) if errors else ("reads", "")


def test_catalogue_has_at_least_40_damaged_variants(entries):
    _, items = entries
    assert len([e for e in items if not e["name"].startswith("good-")]) >= 40


def test_every_entry_behaves_as_catalogued(entries):
    out, items = entries
    failures = []
    for e in items:
        path = out / e["file"]
        got, message = outcome(path)
        # A file set's entry may name the member whose damage the message must name.
        if message and e.get("names", e["file"]) not in message:
            failures.append(f"{e['name']}: message does not name the file: {message}")
        if e["expect"] == "clean":
            continue
        if got != e["expect"]:
            failures.append(f"{e['name']}: expected {e['expect']}, got {got} ({message})")
        elif e["pattern"] and not re.search(e["pattern"], message):
            failures.append(f"{e['name']}: message {message!r} does not match {e['pattern']!r}")
    assert not failures, "\n".join(failures)


def test_overlong_lossless_chunks_are_cut_at_the_tile_as_openslide_does(entries):
    """Streams that decode to more than their tile keep the tile's worth (libtiff's rule, so OpenSlide's)."""
    openslide = pytest.importorskip("openslide")
    out, _ = entries
    import numpy as np

    for codec in ("lzw", "deflate", "zstd"):
        path = out / f"{codec}-overlong.tif"
        level = tilewise.open(path).levels[0].dimensions
        ours = tilewise.open(path).read_region((0, 0), level)
        theirs = np.asarray(openslide.OpenSlide(str(path)).read_region((0, 0), 0, level))[..., :3]
        assert np.array_equal(ours, theirs), codec


def test_overlong_lzw_strip_keeps_the_strip_as_tifffile_does(entries):
    """The QPTIFF defect: an LZW strip decoding 3 bytes past its end; libtiff and tifffile keep the strip."""
    import numpy as np
    import tifffile

    out, _ = entries
    path = out / "lzw-strip-overlong.tif"
    theirs = tifffile.imread(path)
    slide = tilewise.open(path)
    assert np.array_equal(slide.read_region((0, 0), slide.dimensions), theirs)
