"""tilewise.cucim behaves like cuCIM's CuImage. The expectations below were read off cucim-cu13 26.10 on
the same kinds of files; when cuCIM is installed (the benchmark environment), it is also used as an oracle."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import slidegen
import tilewise
import tilewise.cucim
import vendor_tiff
from conftest import assert_same
from tilewise.cucim import CuImage, DLDataType, DLDataTypeCode, preferred_memory_capacity


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("cucim")
    generic = d / "generic.tif"
    slidegen.write_vips_pyramid(generic, slidegen.tissue_image(1024, 768, seed=14))
    aperio = d / "aperio.svs"
    vendor_tiff.write_aperio(aperio, slidegen.tissue_image(1000, 700, seed=15), codec="jpeg-ycbcr")
    return {"generic": generic, "aperio": aperio}


def test_image_properties(files):
    img = CuImage(files["generic"])
    assert img.shape == [768, 1024, 3] and img.ndim == 3 and img.dims == "YXC"
    assert img.dtype == DLDataType(DLDataTypeCode.DLUInt, 8, 1)
    assert img.typestr == "|u1" and str(img.device) == "cpu" and img.is_loaded
    assert img.size("XY") == [1024, 768] and img.size() == [768, 1024, 3]
    assert img.spacing() == [0.25, 0.25, 1.0] and img.spacing("XY") == [0.25, 0.25]
    assert img.spacing_units() == ["micrometer", "micrometer", "color"]
    assert img.channel_names == ["R", "G", "B"] and img.coord_sys == "LPS"
    assert img.origin == [0.0, 0.0, 0.0] and img.direction == [[1.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0]]
    assert img.resolutions == {"level_count": 3, "level_dimensions": ((1024, 768), (512, 384), (256, 192)),
                               "level_downsamples": (1.0, 2.0, 4.0),
                               "level_tile_sizes": ((256, 256), (256, 256), (256, 256))}
    md = img.metadata
    assert set(md["cucim"]) == {"associated_images", "channel_names", "coord_sys", "dims", "direction", "dtype", "ndim",
                                "origin", "path", "resolutions", "shape", "spacing", "spacing_units", "typestr"}
    assert md["tiff"] == {"model": "", "resolution_unit": "centimeter", "software": "", "x_resolution": 40000.0,
                          "y_resolution": 40000.0}
    assert img.associated_images == set() and img.raw_metadata == ""


def test_aperio_metadata_and_associated_images(files):
    img = CuImage(files["aperio"])
    md = img.metadata
    assert md["aperio"]["AppMag"] == "20" and md["aperio"]["MPP"] == "0.499"
    assert md["aperio"]["Header"].startswith("Aperio Image Library")
    assert md["tiff"]["resolution_unit"] == "" and md["tiff"]["x_resolution"] == 1.0
    assert img.spacing() == [1.0, 1.0, 1.0] and img.spacing_units() == ["", "", "color"]
    assert img.associated_images == {"thumbnail", "label", "macro"}
    label = img.associated_image("label")
    assert label.shape == [160, 200, 3] and label.dims == "YXC"
    assert img.raw_metadata.startswith("Aperio Image Library")


def test_read_region_semantics(files):
    img = CuImage(files["generic"])
    region = img.read_region((10, 20), (30, 40))
    assert isinstance(region, CuImage) and region.shape == [40, 30, 3] and region.dims == "YXC"
    assert region.dtype == DLDataType(DLDataTypeCode.DLUInt, 8, 1) and region.typestr == "|u1"
    array = np.asarray(region)
    assert array.shape == (40, 30, 3) and array.dtype == np.uint8
    assert region.__array_interface__["shape"] == (40, 30, 3)
    assert region.size("XY") == [30, 40]
    assert region.resolutions["level_dimensions"] == ((30, 40),)
    assert_same(array, tilewise.open(files["generic"]).read_region((10, 20), (30, 40)))
    assert np.asarray(img.read_region((-5, -5), (10, 10)))[0, 0].tolist() == [0, 0, 0]  # generic: black
    assert np.asarray(CuImage(files["aperio"]).read_region((-5, -5), (10, 10)))[0, 0].tolist() == [255, 255, 255]
    whole = img.read_region()
    assert whole.shape == [768, 1024, 3]
    assert img.read_region(level=2).shape == [192, 256, 3]
    for level in (-1, 3):
        with pytest.raises(ValueError, match="'level' should be less than 3"):
            img.read_region((0, 0), (10, 10), level=level)
    # A region is bounded by the level-0 image at every level: larger than level 2, it is read and filled.
    big = np.asarray(img.read_region((0, 0), (300, 200), level=2))
    assert big.shape == (200, 300, 3)
    assert big[:, 256:].max() == 0 and big[192:].max() == 0
    assert_same(big[:192, :256], tilewise.open(files["generic"]).read_region((0, 0), (256, 192), level=2))
    with pytest.raises(ValueError, match=r"Invalid size \(0\)"):
        img.read_region((0, 0), (0, 10))
    with pytest.raises(ValueError, match="exceeds the original image width 1024"):
        img.read_region((0, 0), (1025, 10))
    with pytest.raises(ValueError, match="Cannot open"):
        CuImage("/nonexistent/file.svs")


def test_device_argument(files):
    img = CuImage(files["generic"])
    assert str(img.read_region((0, 0), (8, 8), device="cpu").device) == "cpu"
    with pytest.raises(ValueError, match="unknown device"):
        img.read_region((0, 0), (8, 8), device="tpu")
    region = img.read_region((0, 0), (8, 8))
    with pytest.raises(AttributeError, match="device='cuda'"):
        region.__cuda_array_interface__
    tilewise._gpu.configure()
    status = tilewise._core.gpu_status(0)
    if status.ok:
        pytest.skip("a GPU is present: tests/gpu covers device reads")
    assert status.code == tilewise._core.StatusCode.UNSUPPORTED and status.message
    # Without a usable GPU (CI), device reads fail with tilewise's UnsupportedError naming the reason.
    for call in (lambda: img.read_region((0, 0), (8, 8), device="cuda"),
                 lambda: img.read_region([(0, 0), (8, 8)], (8, 8), batch_size=2, device="cuda:0")):
        with pytest.raises(tilewise.UnsupportedError, match="not available"):
            call()


def test_iterators(files):
    img = CuImage(files["generic"])
    slide = tilewise.open(files["generic"])
    locs = [(0, 0), (100, 50), (900, 700), (-10, 3), (512, 512)]
    it = img.read_region(locs, (64, 48), num_workers=2)
    assert len(it) == 5
    regions = list(it)
    assert all(r.shape == [48, 64, 3] and r.dims == "YXC" for r in regions)
    for r, loc in zip(regions, locs):
        assert_same(np.asarray(r), slide.read_region(loc, (64, 48), fill=(0, 0, 0)))
    flat = [v for loc in locs for v in loc]
    batches = list(img.read_region(flat, (64, 48), batch_size=2, num_workers=2))
    assert [b.shape for b in batches] == [[2, 48, 64, 3], [2, 48, 64, 3], [1, 48, 64, 3]]
    assert batches[0].dims == "NYXC"
    dropped = img.read_region(np.array(locs, dtype=np.int64), (64, 48), batch_size=2, drop_last=True, num_workers=1)
    assert len(dropped) == 2 and len(list(dropped)) == 2
    shuffled = [np.asarray(b) for b in img.read_region(locs, (64, 48), batch_size=5, shuffle=True, seed=1, num_workers=2)]
    again = [np.asarray(b) for b in img.read_region(locs, (64, 48), batch_size=5, shuffle=True, seed=1, num_workers=2)]
    assert np.array_equal(shuffled[0], again[0])
    # Arrays already handed out stay valid (cuCIM's iterator frees them).
    held = [np.asarray(r) for r in img.read_region(locs * 10, (64, 48), num_workers=4)]
    for array, loc in zip(held[:5], locs):
        assert_same(array, slide.read_region(loc, (64, 48), fill=(0, 0, 0)))


def test_cache_api_and_preferred_capacity(files):
    img = CuImage(files["generic"])
    cache = CuImage.cache("per_process", memory_capacity=64, record_stat=True)
    assert str(cache.type) == "CacheType.PerProcess"
    assert cache.memory_capacity == 64 << 20 and cache.capacity == (64 << 20) // (256 * 256 * 3)
    for _ in range(3):
        img.read_region((10, 10), (300, 300))
    assert cache.hit_count > 0 and cache.miss_count > 0 and cache.size > 0 and cache.memory_size > 0
    assert cache.record() is True
    nocache = CuImage.cache("nocache")
    assert str(nocache.type) == "CacheType.NoCache" and nocache.size == 0
    assert preferred_memory_capacity(img, patch_size=(256, 256)) == 2
    assert preferred_memory_capacity(None, image_size=(100000, 80000), tile_size=(256, 256), patch_size=(256, 256)) == 147
    assert preferred_memory_capacity(image_size=(46000, 32914), tile_size=(240, 240), patch_size=(224, 224)) == 64
    CuImage.cache("per_process", memory_capacity=256)


def test_pickle_and_context_manager(files):
    with CuImage(files["aperio"]) as img:
        clone = pickle.loads(pickle.dumps(img))
        assert clone.shape == img.shape
        region = img.read_region((0, 0), (20, 20))
        assert np.array_equal(np.asarray(pickle.loads(pickle.dumps(region))), np.asarray(region))


@pytest.fixture(scope="module")
def oracle_files(files, tmp_path_factory):
    """More files for the comparison with cuCIM: resolution tags in each unit, an Aperio description that
    repeats keys, a stripped TIFF (cuCIM's slow path)."""
    import tifffile

    d = tmp_path_factory.mktemp("cucim-oracle")
    img = slidegen.tissue_image(600, 400, seed=16)
    out = dict(files)
    for unit, name in ((3, "cm"), (2, "inch"), (1, "none")):
        out[f"res-{name}"] = d / f"res_{name}.tif"
        tifffile.imwrite(out[f"res-{name}"], img, tile=(128, 128), compression="jpeg", photometric="rgb",
                         resolution=(20000, 25000), resolutionunit=unit)
    out["aperio-repeats"] = d / "repeats.svs"
    vendor_tiff.write_aperio(out["aperio-repeats"], img, codec="jpeg-ycbcr", description_extra="|MPP = 0.777|Filename = b")
    out["strips"] = d / "strips.tif"
    tifffile.imwrite(out["strips"], img, rowsperstrip=16, photometric="rgb")
    # Tiled, but not three samples per pixel: cuCIM's slow path too, with RGBA shapes.
    out["grey-tiled"] = d / "grey.tif"
    tifffile.imwrite(out["grey-tiled"], img[..., :1], shape=img[..., :1].shape, tile=(128, 128))
    out["rgba-tiled"] = d / "rgba.tif"
    opaque = np.dstack([img, np.full(img.shape[:2], 255, np.uint8)])
    tifffile.imwrite(out["rgba-tiled"], opaque, shape=opaque.shape, tile=(128, 128), photometric="rgb")
    # Alpha that varies (unassociated): cuCIM's RGBA pixels carry it, colours premultiplied by it.
    out["rgba-alpha"] = d / "rgba_alpha.tif"
    yy, xx = np.mgrid[:img.shape[0], :img.shape[1]]
    faded = np.dstack([img, np.clip((xx + yy) // 3, 0, 255).astype(np.uint8)])
    tifffile.imwrite(out["rgba-alpha"], faded, tile=(128, 128), photometric="rgb",
                     extrasamples=["unassalpha"])
    return out


def test_against_cucim(oracle_files):
    cucim = pytest.importorskip("cucim", reason="cuCIM (requirements-oracles.txt) is not installed")
    for name, path in oracle_files.items():
        ours, theirs = CuImage(path), cucim.CuImage(str(path))
        assert ours.shape == list(theirs.shape) and ours.resolutions == theirs.resolutions, name
        assert ours.spacing() == list(theirs.spacing()), name
        assert ours.channel_names == list(theirs.channel_names), name
        for key in ("spacing", "spacing_units", "channel_names", "shape", "dims", "resolutions"):
            assert ours.metadata["cucim"][key] == theirs.metadata["cucim"][key], (name, key)
        assert ours.metadata["tiff"] == theirs.metadata["tiff"], name
        if "aperio" in theirs.metadata:
            assert ours.metadata["aperio"] == theirs.metadata["aperio"], name
        strips = name in ("strips", "grey-tiled", "rgba-tiled", "rgba-alpha")  # cuCIM's slow path
        if strips:  # RGBA regions
            ours_region, their_region = ours.read_region((0, 0), (32, 16)), theirs.read_region((0, 0), (32, 16))
            assert ours_region.shape == list(their_region.shape) == [16, 32, 4], name
            assert ours_region.channel_names == list(their_region.channel_names), name
            assert ours_region.metadata["cucim"]["channel_names"] == their_region.metadata["cucim"]["channel_names"]
        for loc, size in [((0, 0), (64, 64)), ((-7, -9), (50, 40)), ((300, 200), (256, 256)), ((555, 377), (40, 20))]:
            outside = loc[0] < 0 or loc[1] < 0 or loc[0] + size[0] > ours.shape[1] or loc[1] + size[1] > ours.shape[0]
            if strips and outside:  # cuCIM's slow path refuses regions that leave the image
                for img in (ours, theirs):
                    with pytest.raises(ValueError, match="out-of-boundary"):
                        img.read_region(loc, size)
                continue
            assert np.array_equal(np.asarray(ours.read_region(loc, size)), np.asarray(theirs.read_region(loc, size))), (
                name, loc, size)
    # The slow path is announced on stderr by both, once per image at its first read (a child each: cuCIM
    # writes from C++).
    import subprocess
    import sys

    def announced(module):
        code = (f"from {module} import CuImage; i = CuImage({str(oracle_files['strips'])!r}); "
                "i.read_region((0, 0), (8, 8)); i.read_region((8, 8), (8, 8))")
        err = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stderr
        return [line for line in err.splitlines() if "slow-path" in line]
    assert len(announced("tilewise.cucim")) == 1 and announced("tilewise.cucim") == announced("cucim")
    # The module-level and static API.
    assert CuImage.is_trace_enabled == cucim.CuImage.is_trace_enabled
    assert CuImage.profiler().config == cucim.CuImage.profiler().config
    assert CuImage.cache("per_process", memory_capacity=64).config == cucim.CuImage.cache(
        "per_process", memory_capacity=64).config
    assert str(CuImage.device_cache().type) == str(cucim.CuImage.device_cache().type)
    assert tilewise.cucim.is_available("clara") == cucim.is_available("clara")


def test_against_cucim_when_installed(files):
    cucim = pytest.importorskip("cucim", reason="cuCIM (requirements-oracles.txt) is not installed")
    for path in files.values():
        ours, theirs = CuImage(path), cucim.CuImage(str(path))
        assert ours.shape == list(theirs.shape) and ours.resolutions == theirs.resolutions
        assert ours.spacing() == list(theirs.spacing()) and ours.metadata["cucim"]["spacing_units"] == list(
            theirs.metadata["cucim"]["spacing_units"])
        for loc, size in [((0, 0), (64, 64)), ((-7, -9), (50, 40)), ((300, 200), (256, 256))]:
            assert np.array_equal(np.asarray(ours.read_region(loc, size)), np.asarray(theirs.read_region(loc, size)))


def _error(call) -> str:
    try:
        call()
    except Exception as e:  # noqa: BLE001 - the message is what is compared
        return f"{type(e).__name__}: {e}"
    return "no error"


def test_levels_spacing_and_iteration_against_cucim(oracle_files):
    """A region's spacing at each level, regions larger than their level, level errors and iterating what
    read_region returned, as cuCIM (26.10) has them."""
    cucim = pytest.importorskip("cucim", reason="cuCIM (requirements-oracles.txt) is not installed")
    for name in ("generic", "res-cm", "res-inch", "res-none"):
        ours, theirs = CuImage(oracle_files[name]), cucim.CuImage(str(oracle_files[name]))
        levels = ours.resolutions["level_count"]
        for level in range(levels):
            mine, ref = ours.read_region((0, 0), (100, 60), level=level), theirs.read_region((0, 0), (100, 60), level=level)
            assert mine.spacing() == list(ref.spacing()) and mine.spacing_units() == list(ref.spacing_units()), (name, level)
            assert mine.metadata["cucim"]["spacing"] == ref.metadata["cucim"]["spacing"], (name, level)
            it_mine = next(iter(ours.read_region([(0, 0), (5, 5)], (16, 16), level=level, num_workers=1)))
            it_ref = next(iter(theirs.read_region([(0, 0), (5, 5)], (16, 16), level=level, num_workers=1)))
            assert it_mine.spacing() == list(it_ref.spacing()), (name, level)
        # Larger than the last level, smaller than level 0: read and filled by both.
        if levels > 1:
            w, h = ours.resolutions["level_dimensions"][-1]
            mine = np.asarray(ours.read_region((0, 0), (w + 40, h + 30), level=levels - 1))
            ref = np.asarray(theirs.read_region((0, 0), (w + 40, h + 30), level=levels - 1))
            assert np.array_equal(mine, ref), name
        for level in (-1, levels, levels + 3):
            assert _error(lambda: ours.read_region(level=level)) == _error(lambda: theirs.read_region(level=level))
        width = ours.size("XY")[0]
        assert _error(lambda: ours.read_region((0, 0), (width + 1, 8))) == _error(
            lambda: theirs.read_region((0, 0), (width + 1, 8)))
        # One location in a list, with workers: a single region, which iterates as itself.
        for img in (ours, theirs):
            single = img.read_region([(3, 4)], (16, 16), num_workers=1)
            items = list(single)
            assert len(items) == 1 and items[0] is single and list(items[0].shape) == [16, 16, 3]


def test_cache_defaults_and_configuration_against_cucim():
    """cuCIM starts without a cache; configuring, reserving and switching off change the same numbers. Each
    in a fresh process, since the cache is process-wide."""
    pytest.importorskip("cucim", reason="cuCIM (requirements-oracles.txt) is not installed")
    import json
    import subprocess
    import sys

    script = """
import json, sys
from MODULE import CuImage
from MODULE.clara.cache import preferred_memory_capacity
def state(c):
    return [int(c.type), str(c.type), c.memory_capacity, c.free_memory, c.capacity, c.size, c.hit_count, c.config]
out = [state(CuImage.cache())]
small = preferred_memory_capacity(None, image_size=(1 << 20, 1 << 20), tile_size=(256, 256), patch_size=(256, 256))
large = preferred_memory_capacity(None, image_size=(1 << 20, 1 << 20), tile_size=(256, 256), patch_size=(512, 512))
c = CuImage.cache("per_process", memory_capacity=small)
out.append([small, large] + state(c))
c.reserve(large); out.append(state(c))
c.reserve(small, capacity=500); out.append(state(c))
out.append(state(CuImage.cache("no_cache")))
out.append(state(CuImage.cache("per_process", memory_capacity=2048)))
out.append(state(CuImage.cache("nocache")))
print(json.dumps(out))
"""

    def run(module):
        done = subprocess.run([sys.executable, "-c", script.replace("MODULE", module)], capture_output=True, text=True,
                              check=True)
        return json.loads(done.stdout.splitlines()[-1])

    ours, theirs = run("tilewise.cucim"), run("cucim")
    assert ours == theirs
    assert ours[0][:3] == [0, "CacheType.NoCache", 0] and ours[1][:2] == [1536, 2304]


def test_module_layout_and_flags_against_cucim(tmp_path):
    """cuCIM's module layout (cucim.clara and its cache, io, filesystem and _cucim modules) and its
    availability flags, which programs patch and test."""
    cucim = pytest.importorskip("cucim", reason="cuCIM (requirements-oracles.txt) is not installed")
    import importlib
    from unittest import mock

    for sub in ("clara", "clara.cache", "clara.io", "clara.filesystem", "clara._cucim.cache", "clara._cucim.io",
                "clara._cucim.filesystem", "clara._cucim.profiler"):
        theirs = {n for n in dir(importlib.import_module("cucim." + sub)) if not n.startswith("_")}
        ours = {n for n in dir(importlib.import_module("tilewise.cucim." + sub)) if not n.startswith("_")}
        wanted = theirs - {"cli", "converter", "os"}  # cuCIM's command line and its SVS converter are not provided
        assert wanted <= ours, (sub, wanted - ours)
    from tilewise.cucim.clara._cucim.cache import CacheType
    from tilewise.cucim.clara._cucim.filesystem import FileHandleType
    from tilewise.cucim.clara._cucim.io import Device, DeviceType
    from cucim.clara._cucim.filesystem import FileHandleType as TheirFileHandleType
    from cucim.clara._cucim.io import DeviceType as TheirDeviceType
    assert [int(v) for v in CacheType] == [0, 1, 2]
    assert {n: int(v) for n, v in FileHandleType.__members__.items()} == {
        n: int(v) for n, v in TheirFileHandleType.__members__.items()}
    assert list(DeviceType.__members__) == list(TheirDeviceType.__members__)
    assert Device("cpu").type == DeviceType.CPU and Device("cuda:1").type == DeviceType.CUDA
    for mod in (tilewise.cucim, cucim):
        for cupy in (False, True):
            for clara in (False, True):
                with mock.patch.object(mod, "_is_cupy_available", cupy), mock.patch.object(mod, "_is_clara_available", clara):
                    got = [mod.is_available(n) for n in ("", "skimage", "core", "clara", "other")]
                    assert got == [cupy and clara, cupy, cupy, clara, cupy and clara], (mod.__name__, cupy, clara)
    assert tilewise.cucim.is_available("clara") and not tilewise.cucim.is_available("skimage")


def test_filesystem(tmp_path):
    """cucim.clara.filesystem on POSIX I/O: reads and writes at offsets into host buffers, memory-mapped reads."""
    from tilewise.cucim.clara import filesystem

    path = tmp_path / "data.bin"
    payload = np.arange(1000, dtype=np.uint16).view(np.uint8)
    with filesystem.open(path, "w") as f:
        assert f.pwrite(payload, 2000, 0) == 2000 and f.pwrite(payload, 10, 2000, buf_offset=5) == 10
    assert path.read_bytes() == payload.tobytes() + payload.tobytes()[5:15]
    for flags in ("r", "rp", "rn", "rm"):
        f = filesystem.open(str(path), flags)
        buf = np.zeros(64, np.uint8)
        assert filesystem.pread(f, buf, 32, 100, buf_offset=8) == 32
        assert buf[8:40].tobytes() == payload.tobytes()[100:132] and not buf[:8].any() and not buf[40:].any()
        assert f.pread(buf, 64, 2000) == 10  # up to the end of the file
        assert filesystem.close(f) and f.pread(buf, 4, 0) == -1
    with pytest.raises(ValueError, match="cannot hold"):
        filesystem.open(path).pread(np.zeros(4, np.uint8), 8, 0)
    with pytest.raises(ValueError, match="flags"):
        filesystem.open(path, "x")
    assert filesystem.discard_page_cache(path) and not filesystem.is_gds_available()
