"""Slides over HTTP: nginx (Debian's) serves generated slides on the loopback address; every read through a URL
equals the local file's, errors are typed and keep credentials out, a file replaced while open is refused;
through tests/data/fault_proxy.py, dropped connections, truncated bodies and 503 bursts are retried and
latency costs round trips, never pixels."""

from __future__ import annotations

import builtins
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest

import dicom_wsi
import servers
import slidegen
import tilewise
import vendor_tiff


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    if servers.NGINX is None:
        pytest.skip("nginx (Debian's nginx-light, installed by scripts/bootstrap.sh) is not installed")
    root = tmp_path_factory.mktemp("www")
    proc, url = servers.nginx(root, tmp_path_factory.mktemp("nginx"),
                              autoindex={"/listed/": "html", "/listed-json/": "json"})
    files = {}
    img = slidegen.tissue_image(1300, 900, seed=61)
    files["vips.tif"] = root / "vips.tif"
    slidegen.write_vips_pyramid(files["vips.tif"], img, tile=128)
    files["aperio.svs"] = root / "aperio.svs"
    vendor_tiff.write_aperio(files["aperio.svs"], img, codec="jpeg-ycbcr", tile=128, downsamples=(4,))
    # A DICOM instance alone (its folder has no index, so it is compared with itself alone).
    files["slide.dcm"] = dicom_wsi.write_instance(root / "slide.dcm", img, series=dicom_wsi.new_series(), tile=128)
    # DICOM series in folders whose index the server offers (HTML and JSON autoindex), beside a deeper folder
    # and a file of another kind.
    for folder in ("listed", "listed-json"):
        dicom_wsi.write_series(root / folder, slidegen.tissue_image(900, 700, seed=62), levels=2, tile=128,
                               name="case one")
        (root / folder / "notes.txt").write_text("not a slide")
        (root / folder / "deeper").mkdir()
        dicom_wsi.write_instance(root / folder / "deeper" / "other.dcm", img, series=dicom_wsi.new_series(), tile=128)
    yield {"url": url, "root": root, "files": files}
    servers.stop(proc)


def locations(slide, n, seed):
    rng = np.random.default_rng(seed)
    w, h = slide.dimensions
    return np.stack([rng.integers(-30, w - 50, n), rng.integers(-30, h - 50, n)], axis=1)


def test_remote_slides_equal_local_ones(server):
    for name, path in server["files"].items():
        local, remote = tilewise.open(path), tilewise.open(f"{server['url']}/{name}")
        assert remote.format == local.format and remote.levels == local.levels
        if name.endswith(".dcm"):  # one instance alone (no index of its folder), and the slide says so
            assert any("opened as one instance" in w for w in remote.warnings), remote.warnings
            assert not any("opened as one instance" in w for w in local.warnings), local.warnings
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


def test_faults_are_retried_and_pixels_stay_exact(server, tmp_path):
    """Dropped connections, truncated bodies and bursts of 503 between tilewise and the server: every read
    that succeeds has the local file's pixels, and the whole run is bounded (no hang)."""
    proc, url = servers.fault_proxy(server["url"], tmp_path, drop_every=7, truncate_every=5, burst_503=2, burst_every=13)
    try:
        start = time.time()
        for name, path in server["files"].items():
            local, remote = tilewise.open(path), tilewise.open(f"{url}/{name}")
            assert dict(remote.properties) == dict(local.properties)
            for level in range(local.level_count):
                w, h = local.levels[level].dimensions
                assert np.array_equal(remote.read_region((0, 0), (w, h), level=level),
                                      local.read_region((0, 0), (w, h), level=level)), (name, level)
        stats = servers.proxy_stats(url)
        assert stats["dropped"] > 0 and stats["truncated"] > 0 and stats["503"] > 0, stats
        assert time.time() - start < 120
    finally:
        servers.stop(proc)


def test_latency_costs_round_trips_not_correctness(server, tmp_path):
    """20 ms per request: opening takes a few round trips; random patches (tile cache off) fetch their tiles
    coalesced, within 1.3x of the compressed bytes they touch."""
    import tifffile

    proc, url = servers.fault_proxy(server["url"], tmp_path, latency_ms=20)
    capacity = tilewise.cache_capacity()
    try:
        before = servers.proxy_stats(url)["requests"]
        remote = tilewise.open(f"{url}/aperio.svs")
        opened = servers.proxy_stats(url)["requests"] - before
        assert opened <= 3, f"opening took {opened} requests"
        local = tilewise.open(server["files"]["aperio.svs"])
        with tifffile.TiffFile(server["files"]["aperio.svs"]) as tf:
            page = tf.pages[0]
            across, counts, tile = -(-page.imagewidth // page.tilewidth), page.databytecounts, page.tilewidth
        tilewise.set_cache_capacity(0)
        perfect = 0
        start = servers.proxy_stats(url)
        locs = locations(local, 12, 5)
        for x, y in locs:
            x, y = max(0, int(x)), max(0, int(y))
            assert np.array_equal(remote.read_region((x, y), (256, 256)), local.read_region((x, y), (256, 256)))
            w, h = local.dimensions
            for r in range(y // tile, min(h - 1, y + 255) // tile + 1):
                for c in range(x // tile, min(w - 1, x + 255) // tile + 1):
                    perfect += counts[r * across + c]
        end = servers.proxy_stats(url)
        # The patches' tiles came coalesced: a few requests per patch, and about the bytes they need.
        assert end["requests"] - start["requests"] <= 4 * len(locs)
        assert end["bytes"] - start["bytes"] <= 1.3 * perfect, (end["bytes"] - start["bytes"], perfect)
    finally:
        tilewise.set_cache_capacity(capacity)
        servers.stop(proc)


def test_concurrent_readers_share_requests(server, tmp_path):
    """Eight threads reading one patch at once (tile cache off, 50 ms per request): the bytes in flight for one
    are waited for by the others, not asked for eight times."""
    from concurrent.futures import ThreadPoolExecutor

    path = server["root"] / "large.tif"  # tiles well past the first block, which opening fetches
    if not path.exists():
        slidegen.write_vips_pyramid(path, slidegen.tissue_image(3000, 2400, seed=64), tile=256)
    proc, url = servers.fault_proxy(server["url"], tmp_path, latency_ms=50)
    capacity = tilewise.cache_capacity()
    loc, size = (2100, 1700), (300, 260)
    try:
        local = tilewise.open(path)
        tilewise.set_cache_capacity(0)
        expected = local.read_region(loc, size)
        alone = tilewise.open(f"{url}/large.tif")
        before = servers.proxy_stats(url)["requests"]
        assert np.array_equal(alone.read_region(loc, size), expected)
        one = servers.proxy_stats(url)["requests"] - before
        remote = tilewise.open(f"{url}/large.tif")
        before = servers.proxy_stats(url)["requests"]
        with ThreadPoolExecutor(8) as pool:
            out = list(pool.map(lambda _: remote.read_region(loc, size), range(8)))
        shared = servers.proxy_stats(url)["requests"] - before
        assert all(np.array_equal(o, expected) for o in out)
        assert 1 <= one and shared <= 2 * one, (one, shared)
    finally:
        tilewise.set_cache_capacity(capacity)
        servers.stop(proc)


def test_a_batch_fetches_its_patches_tiles_together(server, tmp_path):
    """read_regions over HTTP (tile cache off, 20 ms per request): a batch's tiles are fetched together,
    in far fewer requests than reading its patches one by one, with the same pixels."""
    path = server["root"] / "large.tif"
    if not path.exists():
        slidegen.write_vips_pyramid(path, slidegen.tissue_image(3000, 2400, seed=64), tile=256)
    proc, url = servers.fault_proxy(server["url"], tmp_path, latency_ms=20)
    capacity = tilewise.cache_capacity()
    try:
        tilewise.set_cache_capacity(0)
        local = tilewise.open(path)
        rng = np.random.default_rng(21)
        locs = np.stack([rng.integers(0, 3000 - 256, 48), rng.integers(0, 2400 - 256, 48)], axis=1)
        expected = [local.read_region((int(x), int(y)), (256, 256)) for x, y in locs]
        one_by_one = tilewise.open(f"{url}/large.tif")
        before = servers.proxy_stats(url)["requests"]
        for (x, y), want in zip(locs, expected):
            assert np.array_equal(one_by_one.read_region((int(x), int(y)), (256, 256)), want)
        singly = servers.proxy_stats(url)["requests"] - before
        batched = tilewise.open(f"{url}/large.tif")
        before = servers.proxy_stats(url)["requests"]
        got = [p for b in batched.read_regions(locs, (256, 256), batch_size=48, num_workers=1) for p in b]
        together = servers.proxy_stats(url)["requests"] - before
        assert all(np.array_equal(a, b) for a, b in zip(got, expected)) and len(got) == 48
        assert together * 2 <= singly, (together, singly)
    finally:
        tilewise.set_cache_capacity(capacity)
        servers.stop(proc)


DISK_CHILD = """
import sys, numpy as np, tilewise
tilewise.set_cache_capacity(0)
slide = tilewise.open(sys.argv[1])
rng = np.random.default_rng(9)
w, h = slide.dimensions
out = [slide.read_region((int(x), int(y)), (256, 256)) for x, y in zip(rng.integers(0, w - 256, 12), rng.integers(0, h - 256, 12))]
np.save(sys.argv[2], np.stack(out))
"""


def test_a_disk_cache_serves_the_next_process(server, tmp_path):
    """TILEWISE_HTTP_DISK_CACHE: a second process reads what the first fetched from disk (one request: the
    opening one, which checks the object's version); a damaged page is fetched again, never served; a
    replaced object gets a new entry; the budget deletes the least recently used object."""
    path = server["root"] / "disk.tif"
    slidegen.write_vips_pyramid(path, slidegen.tissue_image(2600, 2000, seed=65), tile=256)
    proc, url = servers.fault_proxy(server["url"], tmp_path)
    cache = tmp_path / "cache"
    env = dict(os.environ, TILEWISE_HTTP_DISK_CACHE=str(cache))

    def run(name, **extra):
        before = servers.proxy_stats(url)["requests"]
        out = tmp_path / f"{name}.npy"
        subprocess.run([sys.executable, "-c", DISK_CHILD, f"{url}/disk.tif", str(out)], env=dict(env, **extra),
                       check=True, timeout=120)
        return np.load(out), servers.proxy_stats(url)["requests"] - before

    try:
        subprocess.run([sys.executable, "-c", DISK_CHILD, str(path), str(tmp_path / "local.npy")], check=True, timeout=120)
        local = np.load(tmp_path / "local.npy")
        first, asked = run("first")
        assert np.array_equal(first, local) and asked > 1
        second, asked = run("second")
        assert np.array_equal(second, local) and asked == 1, asked
        data = next(cache.glob("*.data"))
        size = data.stat().st_size
        with open(data, "r+b") as f:  # damage every present page's first bytes
            for offset in range(0, size, 4096):
                f.seek(offset)
                chunk = f.read(8)
                if any(chunk):
                    f.seek(offset)
                    f.write(bytes(b ^ 0x5A for b in chunk))
        third, asked = run("third")
        assert np.array_equal(third, local) and asked > 1
        fourth, asked = run("fourth")  # the damaged pages were fetched and stored again
        assert np.array_equal(fourth, local) and asked == 1, asked
        # The object replaced: a new version, a new entry; then a budget below two entries keeps the newer.
        time.sleep(1.1)  # a new Last-Modified second
        slidegen.write_vips_pyramid(path, slidegen.tissue_image(2600, 2000, seed=66), tile=256)
        subprocess.run([sys.executable, "-c", DISK_CHILD, str(path), str(tmp_path / "local2.npy")], check=True, timeout=120)
        fifth, asked = run("fifth", TILEWISE_HTTP_DISK_CACHE_BYTES=str(int(1.5 * size)))
        assert np.array_equal(fifth, np.load(tmp_path / "local2.npy")) and asked > 1
        sixth, _ = run("sixth", TILEWISE_HTTP_DISK_CACHE_BYTES="1K")  # opening keeps the object it opens
        assert np.array_equal(sixth, fifth)
        assert len(list(cache.glob("*.data"))) == 1 and len(list(cache.glob("*.pages"))) == 1
    finally:
        servers.stop(proc)


def test_gcs_objects_with_and_without_a_token(server, tmp_path, monkeypatch):
    """gs://bucket/object through the XML API path (here: nginx, with the proxy asking for a bearer token)."""
    bucket = server["root"] / "lab-bucket" / "cohort"
    bucket.mkdir(parents=True, exist_ok=True)
    shutil.copy(server["files"]["vips.tif"], bucket / "slide 1.tif")
    for k in ("GOOGLE_OAUTH_ACCESS_TOKEN", "CLOUDSDK_AUTH_ACCESS_TOKEN", "STORAGE_EMULATOR_HOST"):
        monkeypatch.delenv(k, raising=False)
    proc, url = servers.fault_proxy(server["url"], tmp_path, require_bearer="tok-123")
    try:
        monkeypatch.setenv("TILEWISE_GCS_ENDPOINT", url)
        with pytest.raises(tilewise.IoError, match=r"gs://lab-bucket/cohort/slide 1.tif: access denied \(HTTP 401\)"):
            tilewise.open("gs://lab-bucket/cohort/slide 1.tif")
        monkeypatch.setenv("GOOGLE_OAUTH_ACCESS_TOKEN", "tok-123")
        remote, local = tilewise.open("gs://lab-bucket/cohort/slide 1.tif"), tilewise.open(server["files"]["vips.tif"])
        assert remote.levels == local.levels
        assert np.array_equal(remote.read_region((100, 80), (300, 200)), local.read_region((100, 80), (300, 200)))
        monkeypatch.setenv("GOOGLE_OAUTH_ACCESS_TOKEN", "wrong")
        with pytest.raises(tilewise.IoError) as e:
            tilewise.open("gs://lab-bucket/cohort/slide 1.tif")
        assert "wrong" not in str(e.value)
    finally:
        servers.stop(proc)
    monkeypatch.setenv("TILEWISE_GCS_ENDPOINT", server["url"])  # a public bucket: no token needed
    monkeypatch.delenv("GOOGLE_OAUTH_ACCESS_TOKEN")
    assert tilewise.open("gs://lab-bucket/cohort/slide 1.tif").levels == tilewise.open(server["files"]["vips.tif"]).levels


def test_a_file_set_resolves_its_members_beside_the_url(server):
    """Hamamatsu VMS over HTTP: the index names its JPEG files, which are fetched beside it."""
    import vms

    index = vms.write_vms(server["root"] / "vms-set", slidegen.tissue_image(512, 384, seed=63), cols=2, rows=2,
                          restart_interval=4)
    local, remote = tilewise.open(index), tilewise.open(f"{server['url']}/vms-set/{index.name}")
    assert remote.format == "hamamatsu" and remote.levels == local.levels
    assert dict(remote.properties) == dict(local.properties)
    for level in range(local.level_count):
        w, h = local.levels[level].dimensions
        assert np.array_equal(remote.read_region((0, 0), (w, h), level=level), local.read_region((0, 0), (w, h), level=level))


def test_file_objects(server, tmp_path):
    """Any binary file object is a source: an open file, BytesIO, an fsspec file (its memory file system
    here); reads from the loader's worker threads call back into Python without deadlock."""
    import io
    import pickle

    fsspec = pytest.importorskip("fsspec")
    path = server["files"]["aperio.svs"]
    local = tilewise.open(path)
    mem = fsspec.filesystem("memory")
    mem.pipe("/slides/aperio.svs", path.read_bytes())
    with builtins.open(path, "rb") as f:
        for source in (f, io.BytesIO(path.read_bytes()), mem.open("/slides/aperio.svs", "rb")):
            slide = tilewise.open(source)
            assert slide.levels == local.levels and dict(slide.properties) == dict(local.properties)
            locs = locations(local, 24, 11)
            ours = np.concatenate(list(slide.read_regions(locs, (96, 96), batch_size=8, num_workers=4)))
            assert np.array_equal(ours, np.concatenate(list(local.read_regions(locs, (96, 96), batch_size=8))))
            assert np.array_equal(slide.associated_images["label"], local.associated_images["label"])
            with pytest.raises(TypeError, match="cannot be pickled"):
                pickle.dumps(slide)

    class Failing(io.BytesIO):
        def read(self, n=-1):
            if self.tell() > 4096:
                raise OSError("the network went away")
            return super().read(n)

    with pytest.raises(tilewise.IoError, match=r"<file object>: .*read at offset \d+ failed: OSError: the network went away"):
        slide = tilewise.open(Failing(path.read_bytes()))
        slide.read_region((0, 0), slide.dimensions)


def test_a_tls_handshake_with_a_plain_port_is_not_retried():
    """TLS to a port that speaks plain HTTP fails the same way every time: one connection, one error,
    instead of five attempts."""
    import socket
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(10)
    accepted = []

    def serve():
        try:
            while True:
                conn, _ = server.accept()
                accepted.append(conn)
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
                conn.close()
        except OSError:
            pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        with pytest.raises(tilewise.IoError) as e:
            tilewise.open(f"https://127.0.0.1:{server.getsockname()[1]}/slide.tif")
    finally:
        server.close()
        thread.join(timeout=10)
    assert len(accepted) == 1 and "attempts" not in str(e.value), (len(accepted), e.value)


@pytest.mark.parametrize("folder", ["listed", "listed-json"])
def test_a_dicom_series_in_a_listed_http_folder(server, folder):
    """Where the server offers an index of a folder (nginx's HTML or JSON autoindex), an instance opens with
    the rest of its series, and so does the folder's URL; the deeper folder and the text file are not part of
    it."""
    local = tilewise.open(server["root"] / folder)
    assert local.level_count == 2 and sorted(local.associated_images) == ["label", "macro", "thumbnail"]
    for url in (f"{server['url']}/{folder}/", f"{server['url']}/{folder}/case%20one-level1.dcm"):
        remote = tilewise.open(url)
        assert remote.warnings == (), remote.warnings
        assert remote.levels == local.levels and dict(remote.properties) == dict(local.properties)
        for key in local.associated_images:
            assert np.array_equal(remote.associated_images[key], local.associated_images[key])
        w, h = local.dimensions
        assert np.array_equal(remote.read_region((0, 0), (w, h)), local.read_region((0, 0), (w, h)))
    with pytest.raises(tilewise.IoError, match="access denied"):
        tilewise.open(f"{server['url']}/")  # no index of the server's root
