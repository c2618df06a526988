"""Hamamatsu NDPI and VMS: generated files (tests/data/ndpi.py, vms.py) against OpenSlide 4.0.1 -
vendor, levels (the stored ones and those OpenSlide derives at 1/2, 1/4, 1/8 scale), every property, the
macro, and pixels at every level - plus the variants OpenSlide cannot check and the compatibility modules."""

from __future__ import annotations

import numpy as np
import pytest

import ndpi
import slidegen
import tilewise
import vms
from test_formats import compare_with_openslide

openslide = pytest.importorskip("openslide")

PROPERTY_MAP = "Objective.Lens.Magnificant=20\r\nNDP.S/N=1234567\r\nEmpty=\r\n=novalue\r\n"


@pytest.fixture(scope="module")
def image() -> np.ndarray:
    return slidegen.tissue_image(2048, 1536, seed=5)


@pytest.mark.parametrize("subsampling,restart_interval", [("4:4:4", 16), ("4:2:2", 8)])
def test_ndpi_matches_openslide(tmp_path, image, subsampling, restart_interval):
    path = tmp_path / f"slide-{subsampling.replace(':', '')}.ndpi"
    ndpi.write_ndpi(path, image, levels=3, restart_interval=restart_interval, subsampling=subsampling,
                    properties=PROPERTY_MAP)
    slide = compare_with_openslide(path, regions=12)
    assert slide.format == "hamamatsu"
    # Three stored levels and the three OpenSlide derives from the smallest by DCT scaling.
    assert [lv.dimensions for lv in slide.levels] == [(2048 >> k, 1536 >> k) for k in range(6)]
    assert slide.properties["hamamatsu.NDP.S/N"] == "1234567"
    assert "hamamatsu.Empty" not in slide.properties
    assert slide.levels[0].tile_size == (restart_interval * (8 if subsampling == "4:4:4" else 16), 8)


@pytest.mark.parametrize("subsampling,restart_interval", [("4:2:2", 64), ("4:4:4", 128)])
def test_ndpi_windows_decoded_from_mcu_checkpoints_match_openslide(tmp_path, image, subsampling, restart_interval):
    """Units of 1,024 x 8 (as wide as real files' intervals get, 4,096, is too slow for OpenSlide here): a
    window far into a unit is decoded from the MCU checkpoint left of it (codecs/jpeg/mcu_index.h), not from
    the unit's start. Every pixel is OpenSlide's at the stored and the DCT-scaled levels, with the index on
    and off."""
    path = tmp_path / f"wide-{subsampling.replace(':', '')}.ndpi"
    ndpi.write_ndpi(path, image, levels=2, restart_interval=restart_interval, subsampling=subsampling)
    capacity = tilewise.mcu_index_stats()["capacity"]
    assert capacity > 0
    try:
        for on in (True, False):
            tilewise.set_mcu_index_capacity(capacity if on else 0)
            before = tilewise.mcu_index_stats()["resumed"]
            compare_with_openslide(path, regions=40, seed=7)
            resumed = tilewise.mcu_index_stats()["resumed"] - before
            assert (resumed > 100) if on else (resumed == 0), resumed
        assert tilewise.mcu_index_stats()["entries"] == 0
    finally:
        tilewise.set_mcu_index_capacity(capacity)
    stats = tilewise.mcu_index_stats()
    slide = compare_with_openslide(path, regions=10, seed=8)
    assert tilewise.mcu_index_stats()["entries"] > stats["entries"]  # kept while the slide is open
    del slide
    assert tilewise.mcu_index_stats()["entries"] == stats["entries"]  # and dropped with it


def test_ndpi_concurrent_workers_share_the_mcu_index(tmp_path, image):
    """Four loader workers (and their decode threads) find and use one unit's checkpoints at once, the tile
    cache off so that every window is decoded alone: the patches equal those read one by one with the index
    off."""
    path = tmp_path / "shared.ndpi"
    ndpi.write_ndpi(path, image, levels=2, restart_interval=64, subsampling="4:2:2")
    rng = np.random.default_rng(9)
    locations = [(int(rng.integers(0, 2048 - 300)), int(rng.integers(0, 1536 - 100))) for _ in range(96)]
    capacity, cache = tilewise.mcu_index_stats()["capacity"], tilewise.cache_capacity()
    tilewise.set_cache_capacity(0)
    try:
        slide = tilewise.open(path)
        before = tilewise.mcu_index_stats()["resumed"]
        batches = list(slide.read_regions(locations, (300, 100), batch_size=16, num_workers=4))
        assert tilewise.mcu_index_stats()["resumed"] - before > 500
        tilewise.set_mcu_index_capacity(0)
        for k, location in enumerate(locations):
            assert (np.asarray(batches[k // 16])[k % 16] == slide.read_region(location, (300, 100))).all(), location
    finally:
        tilewise.set_mcu_index_capacity(capacity)
        tilewise.set_cache_capacity(cache)


def _mcu_index_in_a_child(path: str):
    before = tilewise.mcu_index_stats()
    tilewise.set_cache_capacity(0)
    slide = tilewise.open(path)  # open while the index is counted: a closed slide's entries are dropped
    pixels = slide.read_region((900, 40), (100, 16))
    return before, tilewise.mcu_index_stats(), pixels


def test_ndpi_forked_children_start_their_own_mcu_index(tmp_path, image):
    """A forked child (a DataLoader worker) re-creates the index (it must not touch the parent's locks): it
    starts empty with the capacity the parent configured, indexes its own reads, and reads the parent's
    pixels."""
    import multiprocessing

    path = tmp_path / "fork.ndpi"
    ndpi.write_ndpi(path, image, levels=2, restart_interval=64, subsampling="4:2:2")
    capacity = tilewise.mcu_index_stats()["capacity"]
    cache = tilewise.cache_capacity()
    tilewise.set_cache_capacity(0)
    try:
        slide = tilewise.open(path)
        expected = slide.read_region((900, 40), (100, 16))
        assert tilewise.mcu_index_stats()["entries"] > 0
        for configured in (capacity, 0):
            tilewise.set_mcu_index_capacity(configured)
            with multiprocessing.get_context("fork").Pool(1) as pool:
                before, after, pixels = pool.apply(_mcu_index_in_a_child, (str(path),))
            assert before["entries"] == 0 and before["capacity"] == configured, before
            assert (after["entries"] > 0) == (configured > 0), after
            assert (pixels == expected).all()
    finally:
        tilewise.set_mcu_index_capacity(capacity)
        tilewise.set_cache_capacity(cache)


def test_ndpi_4_2_0_windows_from_mcu_checkpoints_equal_whole_level_reads(tmp_path, image):
    """4:2:0 units (16 rows), which OpenSlide cannot read: windows decoded from checkpoints equal the same
    pixels of whole-level reads (whose units are decoded from their start) at every level."""
    path = tmp_path / "wide420.ndpi"
    ndpi.write_ndpi(path, image, levels=2, restart_interval=64, subsampling="4:2:0")
    slide = tilewise.open(path)
    before = tilewise.mcu_index_stats()["resumed"]
    rng = np.random.default_rng(3)
    for level, lv in enumerate(slide.levels):
        w, h = lv.dimensions
        whole = slide.read_region((0, 0), (w, h), level=level)
        for _ in range(25):
            rw, rh = int(rng.integers(1, 300)), int(rng.integers(1, 60))
            x, y = int(rng.integers(0, w - 1)), int(rng.integers(0, h - 1))
            rw, rh = min(rw, w - x), min(rh, h - y)
            ds = int(lv.downsample)
            got = slide.read_region((x * ds, y * ds), (rw, rh), level=level)
            assert (got == whole[y:y + rh, x:x + rw]).all(), (level, x, y, rw, rh)
    assert tilewise.mcu_index_stats()["resumed"] > before


def test_ndpi_damage_past_a_checkpoint_reads_the_same_with_the_index_on_and_off(tmp_path, image):
    """A marker planted near the end of a unit's data: a window right of the checkpoint before it fails
    with the same error whether it is decoded from the checkpoint or from the unit's start, names the
    level and tile, and a window of the unit's left part still reads (the tile cache off: with it, a unit
    asked for twice is decoded whole, and the damage fails every window of it)."""
    import tifffile

    path = tmp_path / "damaged.ndpi"
    ndpi.write_ndpi(path, image, levels=2, restart_interval=64, subsampling="4:2:2")
    with tifffile.TiffFile(path) as tif:
        strip = tif.pages[0].tags[273].value[0]  # StripOffsets (tifffile's dataoffsets are NDPI's intervals)
        starts = tif.pages[0].tags[ndpi.MCU_STARTS].value
    unit = 3 * (2048 // 1024)  # unit (0, 3) of level 0
    begin, end = strip + starts[unit], strip + starts[unit + 1]
    clean_left = np.asarray(openslide.OpenSlide(str(path)).read_region((300, 24), 0, (50, 8)))[..., :3]
    data = bytearray(path.read_bytes())
    at = begin + (end - begin) * 19 // 20
    while data[at - 1] == 0xFF or data[at] == 0xFF or data[at + 1] == 0xFF:
        at += 1
    data[at:at + 2] = b"\xff\xd5"  # a restart marker inside the interval
    path.write_bytes(bytes(data))
    capacity, cache = tilewise.mcu_index_stats()["capacity"], tilewise.cache_capacity()
    tilewise.set_cache_capacity(0)
    outcomes = []
    try:
        for on in (True, False):
            tilewise.set_mcu_index_capacity(capacity if on else 0)
            slide = tilewise.open(path)
            with pytest.raises(tilewise.CorruptError) as info:
                slide.read_region((1000, 24), (24, 8))
            outcomes.append(str(info.value))
            left = slide.read_region((300, 24), (50, 8))
            assert (left == clean_left).all()  # OpenSlide decodes the whole interval: the damage fails it
    finally:
        tilewise.set_mcu_index_capacity(capacity)
        tilewise.set_cache_capacity(cache)
    assert outcomes[0] == outcomes[1], outcomes
    assert "level 0 tile (0,3)" in outcomes[0], outcomes


def test_ndpi_beyond_4_gib_with_focal_planes(tmp_path, image):
    """A sparse file whose later directories and data lie past 4 GiB (the offsets' high halves), with two
    more focal planes of level 0 only, which are left out (their pyramid is not plane 0's) and reported."""
    path = tmp_path / "big.ndpi"
    ndpi.write_ndpi(path, image, levels=3, restart_interval=16, subsampling="4:4:4", data_at=(4 << 30) + 4097,
                    focal_planes=(1, -1))
    assert path.stat().st_size > 4 << 30
    slide = compare_with_openslide(path, regions=6)
    assert any("focal plane -1 is left out" in w for w in slide.warnings)
    assert any("focal plane 1 is left out" in w for w in slide.warnings)
    assert slide.shape(0)[2] == 1


def test_ndpi_focal_planes(tmp_path, image):
    """Focal planes -1, 0, 1 at every level: Z in that order, plane 0 the default (what OpenSlide and a read
    that names no plane show), each plane equal to tifffile's decoding of its directory."""
    tifffile = pytest.importorskip("tifffile")
    path = tmp_path / "z.ndpi"
    ndpi.write_ndpi(path, image, levels=3, restart_interval=8, subsampling="4:4:4", focal_planes=(-1, 1),
                    planes_at_every_level=True)
    slide = compare_with_openslide(path, regions=6)  # the plain reads: focal plane 0
    assert slide.shape(0)[:3] == (1, 3, 3) and slide.default_z == 1 and not slide.is_rgb and slide.warnings == ()
    with tifffile.TiffFile(path) as tf:
        pages = {}
        for page in tf.pages:
            lens, plane = page.tags.get(65421), page.tags.get(65424)
            if lens is not None and lens.value > 0:
                pages.setdefault(plane.value, []).append(page)
        for z, offset in enumerate((-1, 0, 1)):
            for level, page in enumerate(pages[offset]):
                w, h = slide.levels[level].dimensions
                assert (page.imagewidth, page.imagelength) == (w, h)
                ours = slide.read_region((0, 0), (w, h), level=level, z=z)
                assert np.abs(ours.astype(int) - page.asarray().astype(int)).max() <= 1, (z, level)
    assert np.array_equal(slide.read_region((100, 50), (300, 200)), slide.read_region((100, 50), (300, 200), z=1))
    assert np.array_equal(slide.read_region((100, 50), (300, 200), c="rgb"), slide.read_region((100, 50), (300, 200)))
    shifted = slide.read_region((100, 50), (300, 200), z=2).astype(int)  # plane 1: shifted right by 3 pixels
    aligned = np.abs(shifted - slide.read_region((97, 50), (300, 200), z=1).astype(int)).mean()
    unaligned = np.abs(shifted - slide.read_region((100, 50), (300, 200), z=1).astype(int)).mean()
    assert aligned < unaligned / 2, (aligned, unaligned)  # JPEG blocks differ where the shift moved them
    with pytest.raises(tilewise.InvalidArgumentError, match="z must be 1"):
        slide.read_region((0, 0), (8, 8), z=0, c="rgb")


def test_ndpi_without_mcu_starts_scans_for_restart_markers(tmp_path, image):
    path = tmp_path / "scan.ndpi"
    ndpi.write_ndpi(path, image, levels=2, restart_interval=8, subsampling="4:2:2", with_mcu_starts=False)
    compare_with_openslide(path, regions=6)


def test_ndpi_with_4_2_0_chroma(tmp_path, image):
    """4:2:0 units need the next MCU row for smooth chroma: OpenSlide 4.0.1 cannot read them ("found marker
    0xd9 instead of RST0"); tilewise decodes each unit on its own, close to the image it was made from."""
    path = tmp_path / "420.ndpi"
    ndpi.write_ndpi(path, image, levels=2, restart_interval=8, subsampling="4:2:0")
    with pytest.raises(openslide.OpenSlideError):
        openslide.OpenSlide(str(path)).read_region((0, 0), 0, (64, 64))
    slide = tilewise.open(path)
    got = slide.read_region((0, 0), (2048, 1536)).astype(int)
    assert np.abs(got - image.astype(int)).mean() < 6
    # A window equals the same pixels of a whole-level read.
    window = slide.read_region((333, 517), (300, 200)).astype(int)
    assert (window == got[517:717, 333:633]).all()


def test_ndpi_through_the_compatibility_modules_and_the_loader(tmp_path, image):
    path = tmp_path / "compat.ndpi"
    ndpi.write_ndpi(path, image, levels=3, restart_interval=16, subsampling="4:4:4")
    import tilewise.openslide as tos
    from tilewise.cucim import CuImage

    ours, theirs = tos.OpenSlide(str(path)), openslide.OpenSlide(str(path))
    assert ours.properties[tos.PROPERTY_NAME_VENDOR] == "hamamatsu"
    assert ours.level_dimensions == theirs.level_dimensions
    a = np.asarray(ours.read_region((512, 256), 1, (300, 200)))
    b = np.asarray(theirs.read_region((512, 256), 1, (300, 200)))
    assert (a == b).all()
    assert (np.asarray(ours.associated_images["macro"]) == np.asarray(theirs.associated_images["macro"])).all()
    img = CuImage(str(path))
    assert img.resolutions["level_count"] == 6
    region = np.asarray(img.read_region((100, 50), (128, 96), 0))
    assert (region[..., :3] == b_full(theirs, (100, 50), (128, 96))).all()
    slide = tilewise.open(path)
    locations = [(0, 0), (700, 300), (1900, 1400)]
    batches = list(slide.read_regions(locations, (128, 128), batch_size=3, num_workers=2))
    for k, (x, y) in enumerate(locations):
        assert (np.asarray(batches[0])[k] == slide.read_region((x, y), (128, 128))).all()


@pytest.mark.parametrize("subsampling,restart_interval", [("4:4:4", 16), ("4:2:2", 8)])
def test_ndpi_tiling_through_the_loader_matches_openslide(tmp_path, image, subsampling, restart_interval):
    # A grid of patches narrower than the units (128 wide) and off their columns, read by one worker: the
    # units the patches of a batch share are decoded once for the batch (region/batch_tiles.h) and cut
    # by several patches; the pixels are OpenSlide's and read_region's.
    path = tmp_path / "tiling.ndpi"
    ndpi.write_ndpi(path, image, levels=2, restart_interval=restart_interval, subsampling=subsampling)
    slide, theirs = tilewise.open(path), openslide.OpenSlide(str(path))
    locations = [(x, y) for y in range(5, 1536 - 100, 96) for x in range(37, 2048 - 100, 100)]
    tilewise.set_worker_threads(1)
    try:
        batches = list(slide.read_regions(locations, (100, 100), batch_size=40, num_workers=1))
    finally:
        tilewise.set_worker_threads(0)
    patches = np.concatenate([np.asarray(b) for b in batches])
    for k in range(0, len(locations), 7):
        assert (patches[k] == b_full(theirs, locations[k], (100, 100))).all(), locations[k]
    for k, location in enumerate(locations):
        assert (patches[k] == slide.read_region(location, (100, 100))).all(), location


def b_full(osr, location, size):
    return np.asarray(osr.read_region(location, 0, size))[..., :3]


@pytest.mark.parametrize("subsampling,restart_interval,grid", [("4:4:4", 16, (2, 2)), ("4:2:2", 8, (3, 1))])
def test_vms_matches_openslide(tmp_path, image, subsampling, restart_interval, grid):
    """A VMS set: level 0 from a grid of JPEG files (units of several files in one level), the map level,
    the derived levels, the first file's JPEG comment, the macro, hamamatsu.* keys and quickhash-1."""
    index = vms.write_vms(tmp_path, image[:, :1536] if grid == (3, 1) else image, cols=grid[0], rows=grid[1],
                          restart_interval=restart_interval, subsampling=subsampling)
    slide = compare_with_openslide(index, regions=10)
    assert slide.format == "hamamatsu"
    assert slide.properties["openslide.comment"] == "tilewise test"
    assert slide.properties["hamamatsu.NoJpegColumns"] == str(grid[0])
    assert "macro" in slide.associated_images


def test_vms_errors_name_the_missing_file(tmp_path, image):
    index = vms.write_vms(tmp_path, image, cols=2, rows=2)
    (tmp_path / "slide_1_1.jpg").unlink()
    with pytest.raises(tilewise.errors.TilewiseError, match="slide_1_1.jpg"):
        tilewise.open(index)


def test_vmu_matches_openslide(tmp_path):
    """A VMU set: NGR image and map (12-bit RGB in columns, narrowed by a shift of 4), macro, properties."""
    index = vms.write_vmu(tmp_path, slidegen.tissue_image(1024, 700, seed=9), column_width=64)
    slide = compare_with_openslide(index, regions=10)
    assert slide.format == "hamamatsu"
    assert [lv.tile_size for lv in slide.levels] == [(64, 64), (16, 64)]
