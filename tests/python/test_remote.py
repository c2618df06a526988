"""Slides over HTTP: nginx (Debian's) serves generated slides on the loopback address; every read through a URL
equals the local file's, errors are typed and keep credentials out, a file replaced while open is refused."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

import dicom_wsi
import slidegen
import tilewise
import vendor_tiff

NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    if NGINX is None:
        pytest.skip("nginx (Debian's nginx-light, installed by scripts/bootstrap.sh) is not installed")
    root = tmp_path_factory.mktemp("www")
    state = tmp_path_factory.mktemp("nginx")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    temps = "\n".join(f"{k}_temp_path {state}/{k};" for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    conf = state / "nginx.conf"
    conf.write_text(f"""daemon off; master_process off; pid {state}/nginx.pid; error_log {state}/error.log;
events {{ worker_connections 256; }}
http {{ access_log off; {temps}
  server {{ listen 127.0.0.1:{port}; root {root}; location / {{ }} }} }}
""")
    proc = subprocess.Popen([NGINX, "-c", str(conf), "-p", str(state)], stderr=subprocess.PIPE)
    deadline = time.time() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            if proc.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"nginx did not start: {proc.stderr.read().decode()}")
            time.sleep(0.05)
    files = {}
    img = slidegen.tissue_image(1300, 900, seed=61)
    files["vips.tif"] = root / "vips.tif"
    slidegen.write_vips_pyramid(files["vips.tif"], img, tile=128)
    files["aperio.svs"] = root / "aperio.svs"
    vendor_tiff.write_aperio(files["aperio.svs"], img, codec="jpeg-ycbcr", tile=128, downsamples=(4,))
    # A DICOM instance alone (over HTTP there is no folder to scan, so it is compared with itself alone).
    files["slide.dcm"] = dicom_wsi.write_instance(root / "slide.dcm", img, series=dicom_wsi.new_series(), tile=128)
    yield {"url": f"http://127.0.0.1:{port}", "root": root, "files": files}
    proc.terminate()
    proc.wait(timeout=10)


def locations(slide, n, seed):
    rng = np.random.default_rng(seed)
    w, h = slide.dimensions
    return np.stack([rng.integers(-30, w - 50, n), rng.integers(-30, h - 50, n)], axis=1)


def test_remote_slides_equal_local_ones(server):
    for name, path in server["files"].items():
        local, remote = tilewise.open(path), tilewise.open(f"{server['url']}/{name}")
        assert remote.format == local.format and remote.levels == local.levels
        assert dict(remote.properties) == dict(local.properties)
        assert sorted(remote.associated_images) == sorted(local.associated_images)
        for key in local.associated_images:
            assert np.array_equal(remote.associated_images[key], local.associated_images[key])
        for level in range(local.level_count):
            for x, y in locations(local, 6, level):
                assert np.array_equal(remote.read_region((int(x), int(y)), (160, 120), level=level),
                                      local.read_region((int(x), int(y)), (160, 120), level=level)), (name, level)
        locs = locations(local, 40, 9)
        ours = np.concatenate(list(remote.read_regions(locs, (64, 64), batch_size=8, num_workers=4)))
        assert np.array_equal(ours, np.concatenate(list(local.read_regions(locs, (64, 64), batch_size=8))))
        w, h = local.levels[-1].dimensions
        assert np.array_equal(remote.read_region((0, 0), (w, h), level=local.level_count - 1),
                              local.read_region((0, 0), (w, h), level=local.level_count - 1))


def test_errors_are_typed_and_keep_credentials_out(server):
    secret = "s3cr3t-token"
    url = server["url"].replace("http://", f"http://user:{secret}@") + f"/missing.tif?signature={secret}"
    with pytest.raises(tilewise.NotFoundError) as e:
        tilewise.open(url)
    assert "missing.tif" in str(e.value) and secret not in str(e.value) and "user" not in str(e.value)
    with pytest.raises(tilewise.IoError, match="Could not connect|Couldn't connect|connect"):
        tilewise.open("http://127.0.0.1:9/slide.tif")  # the discard port: nothing listens
    (server["root"] / "notes.txt").write_text("not a slide\n" * 20)
    with pytest.raises(tilewise.UnsupportedError, match="not a TIFF"):
        tilewise.open(f"{server['url']}/notes.txt")


def test_a_file_replaced_while_open_is_refused(server):
    path = server["root"] / "replaced.tif"
    # Large enough (a few MB) that most of it is not in the block cache after opening.
    slidegen.write_vips_pyramid(path, slidegen.tissue_image(3000, 2600, seed=62), tile=256)
    assert path.stat().st_size > 6 * (256 << 10)
    slide = tilewise.open(f"{server['url']}/replaced.tif")
    w, h = slide.dimensions
    time.sleep(1.1)  # nginx's ETag is the modification time (seconds) and the size
    shutil.copy(server["files"]["aperio.svs"], path)
    with pytest.raises(tilewise.IoError, match="changed on the server since the slide was opened"):
        slide.read_region((0, 0), (w, h))


def test_cli_reads_a_url(server):
    exe = shutil.which("tilewise", path=os.path.dirname(sys.executable))
    if exe is None:
        pytest.skip("the tilewise CLI is not installed beside this Python")
    out = subprocess.run([exe, "info", f"{server['url']}/aperio.svs"], capture_output=True, text=True, check=True).stdout
    assert "aperio" in out and "1300" in out
