"""The `tilewise` command: output, PNG files and exit codes."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tifffile
from PIL import Image

import slidegen
import tilewise

EXE = shutil.which("tilewise", path=str(Path(sys.executable).parent))
pytestmark = pytest.mark.skipif(EXE is None, reason="the tilewise command is not installed next to this Python")


def run(*args):
    return subprocess.run([EXE, *map(str, args)], capture_output=True, text=True)


@pytest.fixture(scope="module")
def slide_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli") / "s.tif"
    slidegen.write_vips_pyramid(path, slidegen.tissue_image(1024, 768, seed=6))
    return path


def test_info_text_and_json(slide_path):
    r = run("info", slide_path)
    assert r.returncode == 0, r.stderr
    assert "generic-tiff" in r.stdout and "1024 x 768" in r.stdout and "jpeg" in r.stdout
    r = run("info", slide_path, "--json")
    assert r.returncode == 0
    info = json.loads(r.stdout)
    assert info["format"] == "generic-tiff"
    assert info["levels"][0]["width"] == 1024 and info["levels"][0]["tile_width"] == 256
    assert info["properties"]["openslide.level-count"] == str(len(info["levels"]))
    assert info["mpp"] == pytest.approx([0.25, 0.25])


def test_info_shows_axes_and_channels(tmp_path, slide_path):
    r = run("info", slide_path, "--json")
    assert json.loads(r.stdout)["axes"]["rgb"] is True
    path = tmp_path / "fluo.ome.tif"
    meta = {"axes": "ZCYX", "Channel": {"Name": ["DAPI", "FITC"], "Color": [65535, -16776961]}}
    tifffile.imwrite(path, np.zeros((3, 2, 32, 32), np.uint16), ome=True, metadata=meta)
    r = run("info", path)
    assert r.returncode == 0, r.stderr
    assert "axes: 2 channels (uint16), 3 focal planes, 1 time point" in r.stdout
    assert "DAPI  colour #0000ff" in r.stdout and "FITC  colour #ff0000" in r.stdout
    axes = json.loads(run("info", path, "--json").stdout)["axes"]
    assert (axes["channels"], axes["z"], axes["t"], axes["sample_type"], axes["rgb"]) == (2, 3, 1, "uint16", False)
    assert [c["name"] for c in axes["channel_info"]] == ["DAPI", "FITC"]
    assert axes["channel_info"][1]["color"] == [255, 0, 0]


def test_channels_focal_planes_and_scenes(tmp_path):
    """--channel draws one channel as grey (stretched between its 0.1st and 99.9th percentiles), several as a
    false-colour composite in the file's colours; --z picks the focal plane, --scene the image; info lists the
    scenes and --check reads every plane."""
    path = tmp_path / "fluo.ome.tif"
    rng = np.random.default_rng(1)
    data = rng.integers(0, 4000, (2, 2, 96, 128), np.uint16)  # Z, C
    meta = {"axes": "ZCYX", "Channel": {"Name": ["DAPI", "FITC"], "Color": [65535, 16711935]}}
    with tifffile.TiffWriter(path, ome=True) as tw:
        tw.write(data, tile=(64, 64), photometric="minisblack", metadata=meta)
        tw.write(data[0, 0, :40, :50], tile=(64, 64), photometric="minisblack", metadata={"axes": "YX", "Name": "other"})
    grey, composite = tmp_path / "grey.png", tmp_path / "composite.png"
    r = run("region", path, "--width", 128, "--height", 96, "--channel", 1, "--z", 1, "-o", grey)
    assert r.returncode == 0, r.stderr
    g = np.asarray(Image.open(grey).convert("RGB")).astype(int)
    assert (g[..., 0] == g[..., 1]).all() and (g[..., 1] == g[..., 2]).all()
    plane = data[1, 1].astype(float)
    lo, hi = np.percentile(plane.ravel()[::7], [0.1, 99.9])
    want = np.clip((plane - lo) / (hi - lo), 0, 1) * 255
    assert np.abs(g[..., 0] - want).mean() < 2
    r = run("region", path, "--width", 128, "--height", 96, "--channel", 0, "--channel", 1, "-o", composite)
    assert r.returncode == 0, r.stderr
    c = np.asarray(Image.open(composite).convert("RGB")).astype(int)
    # DAPI blue (0, 0, 255), FITC green (0, 255, 0): red stays empty
    assert c[..., 0].max() == 0 and c[..., 1].max() > 200 and c[..., 2].max() > 200
    r = run("thumbnail", path, "-o", tmp_path / "t.png", "--size", 64, "--channel", 0)
    assert r.returncode == 0, r.stderr
    assert Image.open(tmp_path / "t.png").size == (64, 48)
    r = run("region", path, "--width", 50, "--height", 40, "--scene", 1, "-o", tmp_path / "s.png")
    assert r.returncode == 0, r.stderr
    s1 = np.asarray(Image.open(tmp_path / "s.png").convert("RGB"))
    assert np.array_equal(s1[..., 0], (data[0, 0, :40, :50] >> 8).astype(np.uint8))  # the RGB rendering: high byte
    info = run("info", path)
    assert "scenes: 2 (reading the format's default)" in info.stdout and "1   other: 50 x 40" in info.stdout
    j = json.loads(run("info", path, "--json", "--scene", 1).stdout)
    assert j["scene"] == 1 and [x["name"] for x in j["scenes"]] == ["Image0", "other"]  # tifffile's name for the first
    assert j["levels"][0]["width"] == 50
    r = run("info", path, "--check")
    assert r.returncode == 0 and "tiles: 8 decoded" in r.stdout  # 4 tiles at each of 2 focal planes
    r = run("region", path, "--width", 10, "--height", 10, "--channel", 2, "-o", tmp_path / "x.png")
    assert r.returncode != 0 and "channel 2 does not exist" in r.stderr


def test_region_writes_the_same_pixels_as_the_api(tmp_path, slide_path):
    out = tmp_path / "r.png"
    r = run("region", slide_path, "--level", 1, "--x", 100, "--y", 60, "--width", 300, "--height", 200, "-o", out)
    assert r.returncode == 0, r.stderr
    png = np.asarray(Image.open(out).convert("RGB"))
    expected = tilewise.open(slide_path).read_region((100, 60), (300, 200), level=1)
    assert np.array_equal(png, expected)


def test_thumbnail_and_bench(tmp_path, slide_path):
    out = tmp_path / "t.png"
    r = run("thumbnail", slide_path, "-o", out, "--size", 128)
    assert r.returncode == 0, r.stderr
    assert Image.open(out).size == (128, 96)
    r = run("bench", slide_path, "--patches", 50, "--workers", 2)
    assert r.returncode == 0, r.stderr
    assert "patches/s" in r.stdout and "MPix/s" in r.stdout


def test_exit_codes_and_messages(tmp_path, slide_path):
    r = run("info", tmp_path / "missing.tif")
    assert r.returncode == 3 and "missing.tif: no such file" in r.stderr
    bad = tmp_path / "bad.tif"
    bad.write_bytes(b"not a tiff at all")
    r = run("info", bad)
    assert r.returncode == 4 and "not a TIFF" in r.stderr
    r = run("region", slide_path, "--level", 9, "--width", 10, "--height", 10, "-o", tmp_path / "x.png")
    assert r.returncode == 2 and "level 9 does not exist" in r.stderr
    r = run("region", slide_path, "--width", -1, "--height", 10, "-o", tmp_path / "x.png")
    assert r.returncode == 2
    r = run("nonsense")
    assert r.returncode == 2
    data = slide_path.read_bytes()
    cut = tmp_path / "cut.tif"
    cut.write_bytes(data[:200] + b"\0" * (len(data) - 200))  # tile data wiped, directories intact
    r = run("region", cut, "--width", 256, "--height", 256, "-o", tmp_path / "y.png")
    assert r.returncode in (4, 5) and "cut.tif" in r.stderr


def test_large_reads_show_progress_on_a_terminal_and_write_the_same_image(tmp_path):
    """Regions and thumbnails of >= 64 MPix are read in bands of tile rows with a progress bar on stderr when
    it is a terminal; the image is the one a single read gives."""
    import os
    import pty

    big = tmp_path / "big.tif"
    image = np.zeros((8200, 8200, 3), np.uint8)
    image[::7] = 200
    image[:, ::5, 1] = 90
    slidegen.write_vips_pyramid(big, image, tile=256)
    args = ["region", str(big), "--x", "3", "--y", "5", "--width", "8197", "--height", "8195"]
    plain = run(*args, "-o", str(tmp_path / "plain.png"))
    assert plain.returncode == 0 and "[" not in plain.stderr  # not a terminal: no bar
    master, slave = pty.openpty()
    try:
        p = subprocess.run([EXE, *args, "-o", str(tmp_path / "tty.png")], stderr=slave, stdout=subprocess.PIPE)
        os.close(slave)
        shown = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(master)
    assert p.returncode == 0
    assert b"8195/8195" in shown and shown.count(b"\r") > 5
    assert (tmp_path / "tty.png").read_bytes() == (tmp_path / "plain.png").read_bytes()


def test_info_check_decodes_every_tile_and_fails_on_damage(slide_path, tmp_path):
    """`info` alone says the tiles were not checked; `--check` decodes each one, names each that fails and
    exits 5 (corrupt) then."""
    r = run("info", slide_path)
    assert "tiles: not checked" in r.stdout and r.returncode == 0
    slide = tilewise.open(slide_path)
    tiles = sum(-(-w // lv.tile_size[0]) * -(-h // lv.tile_size[1]) for lv in slide.levels
                for w, h in [lv.dimensions])
    r = run("info", slide_path, "--check", "--threads", "2")
    assert r.returncode == 0, r.stderr
    assert f"tiles: {tiles} decoded, 0 absent (read as background), 0 failed" in r.stdout
    damaged = tmp_path / "damaged.tif"
    data = bytearray(slide_path.read_bytes())
    import tifffile

    with tifffile.TiffFile(slide_path) as t:
        page = t.pages[0]
        offsets, counts = page.dataoffsets, page.databytecounts
    for k in (1, 5):  # two tiles of level 0: the markers after their SOI overwritten
        data[offsets[k] + 2:offsets[k] + 40] = b"\xaa" * 38
    damaged.write_bytes(data)
    r = run("info", damaged, "--check", "--json")
    assert r.returncode == 5, r.stderr
    report = json.loads(r.stdout)["check"]
    assert report["tiles"] == tiles and [f["where"] for f in report["failures"]] == ["level 0 tile (1,0)",
                                                                                    "level 0 tile (1,1)"]
    assert all("jpeg" in f["error"] for f in report["failures"]), report
