"""DICOMweb series: Orthanc 1.10 with its DICOMweb plugin (Debian's `orthanc`, `orthanc-dicomweb`), started on
the loopback address with a generated configuration (orthanc_server.py) and loaded with generated series of
every transfer syntax tilewise reads, TILED_FULL and TILED_SPARSE, a concatenation, channels with focal
planes, and a syntax tilewise does not decode (RLE, which the server decompresses). Every series opened by
its URL equals the same files opened from a local folder; credentials, errors and the fault proxy
(tests/data/fault_proxy.py: latency, resets, truncated bodies, 503 bursts) in front of the server."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import urllib.request

import numpy as np
import pydicom
import pytest

import dicom_wsi
import servers
import slidegen
import tilewise
from orthanc_server import OrthancServer

# File meta elements only a Part 10 file has: DICOMweb metadata does not carry them.
FILE_ONLY = {"dicom.ImplementationClassUID", "dicom.ImplementationVersionName", "dicom.FileMetaInformationVersion",
             "dicom.FileMetaInformationGroupLength"}


def upload(server: OrthancServer, files) -> None:
    for f in files:
        request = urllib.request.Request(server.url + "/instances", data=f.read_bytes(), method="POST",
                                         headers=server.auth_header())
        urllib.request.urlopen(request, timeout=60).read()


def series_url(server: OrthancServer, path) -> str:
    ds = pydicom.dcmread(path, stop_before_pixels=True)
    return f"{server.dicomweb_url}/studies/{ds.StudyInstanceUID}/series/{ds.SeriesInstanceUID}"


def concatenation(folder, image):
    """A level split over two instances of one concatenation."""
    folder.mkdir(parents=True)
    whole = dicom_wsi.write_instance(folder / "whole.tmp", image, series=dicom_wsi.new_series(), tile=128)
    first, _ = dicom_wsi.write_concatenation(whole, folder, 20)
    whole.unlink()
    return first


@pytest.fixture(scope="module")
def series(tmp_path_factory):
    """{name: (local path, files)} of generated series, and one Orthanc holding them all."""
    root = tmp_path_factory.mktemp("dicomweb")
    img = slidegen.tissue_image(1100, 800, seed=81)
    made = {}
    for codec in ("jpeg", "raw", "raw-implicit", "jpeg2000", "jpeg2000-lossless", "jpegls", "jpegls-near"):
        made[codec] = dicom_wsi.write_series(root / codec, img, levels=2, tile=128, codec=codec, name=codec)
    (root / "sparse").mkdir()
    made["sparse"] = dicom_wsi.write_instance(root / "sparse" / "level0.dcm", img, series=dicom_wsi.new_series(),
                                              tile=128, sparse_missing=[1, 5, 17])
    made["concatenation"] = concatenation(root / "concatenation", img)
    rng = np.random.default_rng(5)
    planes = rng.integers(0, 4000, (2, 2, 300, 420)).astype(np.uint16)
    (root / "channels").mkdir()
    made["channels"] = dicom_wsi.write_instance(
        root / "channels" / "level0.dcm", planes, series=dicom_wsi.new_series(), tile=128, codec="jpegls",
        paths=({"id": "1", "description": "DAPI", "wavelength": 405}, {"id": "2", "description": "FITC", "wavelength": 488}),
        z_offsets_um=(0.0, 1.5), sparse=True)
    # RLE Lossless: tilewise does not decode it, so frames are asked for as explicit VR little endian.
    (root / "rle").mkdir()
    raw = dicom_wsi.write_instance(root / "rle" / "level0.tmp", img[:512, :768], series=dicom_wsi.new_series(), tile=256,
                                   codec="raw")
    ds = pydicom.dcmread(raw)
    ds.compress(pydicom.uid.RLELossless, encoding_plugin="pydicom")
    ds.save_as(root / "rle" / "level0.dcm", enforce_file_format=True)
    raw.unlink()
    made["rle"] = root / "rle" / "level0.dcm"
    # A series of an independent writer: Orthanc's own dicomizer (Debian's orthanc-wsi) from a libvips TIFF.
    dicomizer = shutil.which("OrthancWSIDicomizer")
    assert dicomizer, "OrthancWSIDicomizer (Debian's orthanc-wsi, installed by scripts/bootstrap.sh) is not installed"
    slidegen.write_vips_pyramid(root / "source.tif", img, tile=256)
    (root / "orthanc-wsi").mkdir()
    sample = subprocess.run([dicomizer, "--sample-dataset"], capture_output=True, text=True, check=True).stdout
    (root / "dataset.json").write_text(sample)  # without one the dicomizer writes no Image Type
    subprocess.run([dicomizer, "--threads", "1", "--tile-width", "256", "--tile-height", "256", "--compression", "jpeg",
                    "--dataset", str(root / "dataset.json"), "--folder", str(root / "orthanc-wsi"), str(root / "source.tif")],
                   check=True, capture_output=True)
    made["orthanc-wsi"] = sorted((root / "orthanc-wsi").glob("*.dcm"))[0]
    server = OrthancServer(root / "orthanc")
    try:
        upload(server, sorted(p for folder in root.iterdir() if folder.is_dir() and folder.name != "orthanc"
                              for p in folder.glob("*.dcm")))
        yield server, made, img
    finally:
        server.stop()


def assert_same_properties(remote, local):
    """Equal properties, but for the file meta a server does not carry and decimal strings a server rewrites
    as JSON numbers (40.0 -> 40): those compare as numbers."""
    ours, theirs = dict(remote.properties), dict(local.properties)
    assert set(ours) == set(theirs) - FILE_ONLY, set(ours) ^ (set(theirs) - FILE_ONLY)
    for key, value in ours.items():
        if value != theirs[key]:
            assert float(value) == float(theirs[key]), (key, value, theirs[key])


def assert_same_slide(remote, local, seed=1):
    assert remote.format == local.format == "dicom"
    assert remote.levels == local.levels
    assert remote.shape(0) == local.shape(0) and remote.dtype == local.dtype
    assert [c.name for c in remote.channels] == [c.name for c in local.channels]
    assert_same_properties(remote, local)
    assert remote.icc_profile == local.icc_profile
    assert sorted(remote.associated_images) == sorted(local.associated_images)
    for key in local.associated_images:
        assert np.array_equal(remote.associated_images[key], local.associated_images[key]), key
    rng = np.random.default_rng(seed)
    zs = local.shape(0)[2]
    for level in range(local.level_count):
        w, h = local.levels[level].dimensions
        ds = local.levels[level].downsample
        assert np.array_equal(remote.read_region((0, 0), (w, h), level=level), local.read_region((0, 0), (w, h), level=level))
        for _ in range(3):
            x, y = int(rng.integers(-20, w - 40)), int(rng.integers(-20, h - 40))
            z = int(rng.integers(0, zs))
            loc = (int(x * ds), int(y * ds))
            assert np.array_equal(remote.read_region(loc, (150, 110), level=level, z=z),
                                  local.read_region(loc, (150, 110), level=level, z=z)), (level, x, y, z)


@pytest.mark.parametrize("name", ["jpeg", "raw", "raw-implicit", "jpeg2000", "jpeg2000-lossless", "jpegls", "jpegls-near",
                                  "sparse", "concatenation", "channels", "orthanc-wsi"])
def test_a_series_over_dicomweb_equals_its_local_folder(series, name):
    server, made, _ = series
    local = tilewise.open(made[name].parent)
    remote = tilewise.open(series_url(server, made[name]))
    assert remote.warnings == local.warnings == ()
    assert_same_slide(remote, local)


def test_a_syntax_tilewise_does_not_decode_is_asked_for_decompressed(series):
    """RLE Lossless frames come back as explicit VR little endian (the server decompresses them): pixels
    equal pydicom's decoding of the stored file."""
    server, made, _ = series
    remote = tilewise.open(series_url(server, made["rle"]) + "/")
    assert remote.levels[0].compression == "none"
    assert remote.properties["dicom.TransferSyntaxUID"] == "1.2.840.10008.1.2.1"
    want = pydicom.dcmread(made["rle"])
    w, h = remote.dimensions
    tiles = want.pixel_array  # (frames, 256, 256, 3), row-major
    across = -(-w // 256)
    for i in range(tiles.shape[0]):
        r, c = divmod(i, across)
        tw, th = min(256, w - c * 256), min(256, h - r * 256)
        assert np.array_equal(remote.read_region((c * 256, r * 256), (tw, th)), tiles[i, :th, :tw]), i


def test_drop_ins_loader_and_zarr_read_a_dicomweb_series(series):
    """The openslide and cucim drop-ins, the batch loader and the zarr store take the URL unchanged."""
    server, made, _ = series
    url = series_url(server, made["jpeg"])
    local = tilewise.open(made["jpeg"].parent)
    import tilewise.openslide as openslide_compat
    from tilewise.cucim import CuImage

    want = local.read_region((300, 200), (256, 256))
    assert np.array_equal(np.asarray(openslide_compat.OpenSlide(url).read_region((300, 200), 0, (256, 256)))[..., :3], want)
    assert np.array_equal(np.asarray(CuImage(url).read_region((300, 200), (256, 256), 0)), want)
    remote = tilewise.open(url)
    locs = np.array([[0, 0], [300, 200], [800, 500], [1000, 700]])
    got = [p for batch in remote.read_regions(locs, (128, 128), batch_size=4, num_workers=2) for p in batch]
    assert all(np.array_equal(g, local.read_region((int(x), int(y)), (128, 128))) for g, (x, y) in zip(got, locs))
    pytest.importorskip("zarr")
    group = remote.zarr()
    assert np.array_equal(np.asarray(group["0"][200:456, 300:556]), want)


def test_errors_name_the_url_and_status(series):
    server, made, _ = series
    study = pydicom.dcmread(made["jpeg"], stop_before_pixels=True).StudyInstanceUID
    missing = f"{server.dicomweb_url}/studies/{study}/series/1.2.3.4"
    with pytest.raises(tilewise.NotFoundError, match="series/1.2.3.4: the server lists no instance"):
        tilewise.open(missing)
    with pytest.raises(tilewise.IoError, match=r"127.0.0.1:1/dicom-web/studies/1/series/2/"):
        tilewise.open("http://127.0.0.1:1/dicom-web/studies/1/series/2")


@pytest.fixture(scope="module")
def authenticated(tmp_path_factory, series):
    _, made, _ = series
    server = OrthancServer(tmp_path_factory.mktemp("orthanc-auth"), users={"reader": "s3cret-pass"})
    try:
        upload(server, sorted(made["jpeg"].parent.glob("*.dcm")))
        yield server
    finally:
        server.stop()


def test_credentials_as_headers_and_bearer_tokens(series, authenticated, tmp_path):
    """Without credentials an authenticated server answers 401 (named, with the URL, the password nowhere);
    with headers (HTTP basic here) the series reads; a bearer token (the fault proxy requires one in front of
    the server) goes as an argument or through TILEWISE_HTTP_TOKEN in a fresh process."""
    _, made, _ = series
    url = series_url(authenticated, made["jpeg"])
    with pytest.raises(tilewise.IoError, match=r"series/[0-9.]+/.*access denied \(HTTP 401\)") as failure:
        tilewise.open(url)
    assert "s3cret" not in str(failure.value)
    local = tilewise.open(made["jpeg"].parent)
    remote = tilewise.open(url, headers=authenticated.auth_header())
    assert np.array_equal(remote.read_region((0, 0), (1100, 800)), local.read_region((0, 0), (1100, 800)))
    import pickle
    assert np.array_equal(pickle.loads(pickle.dumps(remote)).read_region((100, 100), (300, 200)),
                          local.read_region((100, 100), (300, 200)))

    server, _, _ = series
    proc, proxy = servers.fault_proxy(server.url, tmp_path, require_bearer="tok-123")
    try:
        behind = series_url(server, made["jpeg"]).replace(server.url, proxy)
        with pytest.raises(tilewise.IoError, match=r"access denied \(HTTP 401\)"):
            tilewise.open(behind)
        assert np.array_equal(tilewise.open(behind, token="tok-123").read_region((0, 0), (1100, 800)),
                              local.read_region((0, 0), (1100, 800)))
        code = "import tilewise, sys; print(tilewise.open(sys.argv[1]).dimensions)"
        env = dict(os.environ, TILEWISE_HTTP_TOKEN="tok-123")
        out = subprocess.run([sys.executable, "-c", code, behind], env=env, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0 and out.stdout.strip() == "(1100, 800)", out.stderr
    finally:
        servers.stop(proc)


def test_faults_are_retried_and_pixels_stay_exact(series, tmp_path):
    """Dropped connections, truncated multipart bodies and 503 bursts between tilewise and the server: every
    read still equals the local folder's."""
    server, made, _ = series
    local = tilewise.open(made["jpeg2000"].parent)
    proc, proxy = servers.fault_proxy(server.url, tmp_path, drop_every=7, truncate_every=5, burst_503=2, burst_every=11)
    capacity = tilewise.cache_capacity()
    try:
        tilewise.set_cache_capacity(0)
        remote = tilewise.open(series_url(server, made["jpeg2000"]).replace(server.url, proxy))
        assert_same_slide(remote, local, seed=4)
        stats = servers.proxy_stats(proxy)
        assert stats["dropped"] and stats["truncated"] and stats["503"], stats
    finally:
        tilewise.set_cache_capacity(capacity)
        servers.stop(proc)


def test_a_patch_fetches_the_frames_it_touches_in_one_request(series, tmp_path):
    """Behind 20 ms of latency, each random 256^2 patch (tile cache off) costs one request holding the frames
    it touches - their bytes within 1.2x of those frames' - and the pixels are the local folder's."""
    server, made, _ = series
    path = made["jpeg"]
    local = tilewise.open(path.parent)
    ds = pydicom.dcmread(path)
    frames = [len(f) for f in pydicom.encaps.generate_frames(ds.PixelData, number_of_frames=int(ds.NumberOfFrames))]
    across = -(-1100 // 128)
    proc, proxy = servers.fault_proxy(server.url, tmp_path, latency_ms=20)
    capacity = tilewise.cache_capacity()
    try:
        tilewise.set_cache_capacity(0)
        remote = tilewise.open(series_url(server, path).replace(server.url, proxy))
        rng = np.random.default_rng(9)
        seen = {0}  # frame 1 of each instance is fetched at open (the server's metadata names no syntax)
        for _ in range(12):
            x, y = int(rng.integers(0, 1100 - 256)), int(rng.integers(0, 800 - 256))
            needed = {r * across + c for r in range(y // 128, (y + 255) // 128 + 1)
                      for c in range(x // 128, (x + 255) // 128 + 1)} - seen
            seen |= needed
            before = servers.proxy_stats(proxy)
            assert np.array_equal(remote.read_region((x, y), (256, 256)), local.read_region((x, y), (256, 256)))
            after = servers.proxy_stats(proxy)
            # one request per patch with new frames; its body: those frames and each part's headers (~400 bytes)
            assert after["requests"] - before["requests"] == (1 if needed else 0), (needed, after, before)
            touched = sum(frames[i] for i in needed)
            assert after["bytes"] - before["bytes"] <= 1.2 * touched + 600 * len(needed), (after, before, touched)
    finally:
        tilewise.set_cache_capacity(capacity)
        servers.stop(proc)


DISK_CHILD = """
import sys, numpy as np, tilewise
tilewise.set_cache_capacity(0)
s = tilewise.open(sys.argv[1])
if sys.argv[2] == "read":
    for level in range(s.level_count):
        w, h = s.levels[level].dimensions
        np.save(sys.argv[3] + f"-{level}.npy", s.read_region((0, 0), (w, h), level=level))
"""


def test_the_disk_cache_keeps_frames_for_the_next_process(series, tmp_path):
    """With TILEWISE_HTTP_DISK_CACHE, a later process reads every frame from disk: beyond what opening costs
    it makes no request, and its pixels are the first process's; a damaged cache file is read as a miss."""
    server, made, _ = series
    proc, proxy = servers.fault_proxy(server.url, tmp_path)
    url = series_url(server, made["jpeg2000-lossless"]).replace(server.url, proxy)
    env = dict(os.environ, TILEWISE_HTTP_DISK_CACHE=str(tmp_path / "cache"))

    def run(kind, tag=""):
        before = servers.proxy_stats(proxy)["requests"]
        out = subprocess.run([sys.executable, "-c", DISK_CHILD, url, kind, str(tmp_path / tag)], env=env,
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        return servers.proxy_stats(proxy)["requests"] - before

    try:
        opening = run("open")
        assert run("read", "first") > opening  # frames fetched and kept
        assert run("read", "second") == opening  # every frame from disk
        local = tilewise.open(made["jpeg2000-lossless"].parent)
        for level in range(local.level_count):
            w, h = local.levels[level].dimensions
            want = local.read_region((0, 0), (w, h), level=level)
            assert np.array_equal(np.load(tmp_path / f"first-{level}.npy"), want)
            assert np.array_equal(np.load(tmp_path / f"second-{level}.npy"), want)
        for data in (tmp_path / "cache").glob("*.data"):  # damage every cached byte: fetched again, never wrong
            with open(data, "r+b") as f:
                size = f.seek(0, 2)
                for at in range(0, size, 4096):
                    f.seek(at)
                    f.write(b"\x5a" * 16)
        assert run("read", "third") > opening
        for level in range(local.level_count):
            w, h = local.levels[level].dimensions
            assert np.array_equal(np.load(tmp_path / f"third-{level}.npy"), local.read_region((0, 0), (w, h), level=level))
    finally:
        servers.stop(proc)


def test_concurrent_readers_merge_their_requests(series, tmp_path):
    """Eight threads reading one tile each of an instance behind 20 ms of latency (each tile a frame no one
    read before): while two requests are in flight the frames wanted next wait and go together, so there
    are fewer requests than tiles; every tile is the local folder's."""
    from concurrent.futures import ThreadPoolExecutor

    server, made, _ = series
    local = tilewise.open(made["jpegls"].parent)
    proc, proxy = servers.fault_proxy(server.url, tmp_path, latency_ms=20)
    capacity = tilewise.cache_capacity()
    try:
        tilewise.set_cache_capacity(0)
        remote = tilewise.open(series_url(server, made["jpegls"]).replace(server.url, proxy))
        tiles = [(x, y) for y in range(0, 800, 128) for x in range(0, 1100, 128)][1:]  # frame 1 came with the open
        size = lambda t: (min(128, 1100 - t[0]), min(128, 800 - t[1]))  # noqa: E731
        before = servers.proxy_stats(proxy)["requests"]
        with ThreadPoolExecutor(8) as pool:
            got = list(pool.map(lambda t: remote.read_region(t, size(t)), tiles))
        requests = servers.proxy_stats(proxy)["requests"] - before
        assert all(np.array_equal(g, local.read_region(t, size(t))) for g, t in zip(got, tiles))
        assert 0 < requests <= 0.75 * len(tiles), (requests, len(tiles))
    finally:
        tilewise.set_cache_capacity(capacity)
        servers.stop(proc)


def test_recorded_answers_replay_as_the_server_gave_them(series, tmp_path):
    """tests/data/dicomweb_replay.py (the GPU machine's stand-in for Orthanc) records Orthanc's answers for a
    series and serves them again: the series reads as from Orthanc and from its local folder."""
    from dicomweb_replay import ReplayServer, record

    server, made, _ = series
    record(series_url(server, made["jpeg2000"]), tmp_path / "recorded")
    replay = ReplayServer(tmp_path / "recorded")
    try:
        remote = tilewise.open(replay.start())
        assert_same_slide(remote, tilewise.open(made["jpeg2000"].parent))
        assert replay.stats["requests"] > 0
    finally:
        replay.stop()
