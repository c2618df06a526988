"""Random 256x256 patches from a Hamamatsu NDPI level whose one JPEG is 61,440 pixels wide:
tilewise against OpenSlide, 1 thread and N threads, caches off, each tool in its own process so that its
peak memory (VmHWM) is its own. The slides (tests/data/ndpi.py, 4:2:2, restart intervals of 64 and 256
MCUs = units of 1024 x 8 and 4096 x 8, the latter as OpenSlide's documentation describes real files) are
generated once into bench/data.

Then whole-level tiling of level 0 (256 x 256 patches of the level's grid through read_regions) against the
libjpeg-turbo ceiling: the same level's restart-interval units, assembled as complete JPEGs, decoded by
bench/native/jpeg_ceiling from memory with nothing else to do.

tilewise's rows: "tilewise" reads with its MCU index (windows decoded from the checkpoint left of them) as
it stands after the warm-up pass over the same patches; "tilewise-cold" drops the index before every
repetition (each pays for finding its checkpoints, as a first pass over a slide does); "tilewise-noindex"
has it off (every window entropy-decoded from its unit's start, as before the index).

    bench_ndpi.py [--patches N] [--reps R] [--quick]"""

from __future__ import annotations

import json
import os
import sys

import numpy as np

from common import bench_parser, DATA, REPO, Table, child_row, jpeg_ceiling, publish, random_patch_rates, slidegen, time_runs

sys.path.insert(0, str(REPO / "tests" / "data"))
import ndpi  # noqa: E402


def ndpi_slide(width: int, height: int, restart_interval: int) -> "os.PathLike":
    DATA.mkdir(parents=True, exist_ok=True)
    path = DATA / f"ndpi_{width}x{height}_ri{restart_interval}.ndpi"
    if not path.exists():
        print(f"generating {path.name} ...", flush=True)
        block = slidegen.ihc_tissue(min(width, 4096), min(height, 4096), seed=4)
        image = np.tile(block, (height // block.shape[0] + 1, width // block.shape[1] + 1, 1))[:height, :width]
        tmp = path.with_suffix(".partial.ndpi")
        ndpi.write_ndpi(tmp, np.ascontiguousarray(image), levels=3, restart_interval=[restart_interval, 64],
                        subsampling="4:2:2", quality=85)
        tmp.rename(path)
    return path


def unit_streams(path) -> list:
    """Level 0's restart-interval units as complete JPEGs (the image's header with its SOF sized to one
    unit, the interval's bytes, EOI), as tilewise decodes them."""
    import struct

    with open(path, "rb") as f:  # the first directory's strip (NDPI: 64-bit first IFD offset)
        f.seek(4)
        ifd = struct.unpack("<Q", f.read(8))[0]
        f.seek(ifd)
        count = struct.unpack("<H", f.read(2))[0]
        entries = {tag: value for tag, _, _, value in (struct.unpack("<HHII", f.read(12)) for _ in range(count))}
        f.seek(entries[273])
        jpeg = f.read(entries[279])
    starts = ndpi.interval_starts(jpeg)
    header = bytearray(jpeg[: starts[0]])
    pos = 2
    while True:  # the SOF: sized to one unit (restart interval x MCU width, one MCU row)
        marker, seg = header[pos + 1], struct.unpack_from(">H", header, pos + 2)[0]
        if 0xC0 <= marker <= 0xC3:
            comps = header[pos + 9]
            hmax = max(header[pos + 11 + 3 * c] >> 4 for c in range(comps))
            vmax = max(header[pos + 11 + 3 * c] & 15 for c in range(comps))
        if marker == 0xDD:
            interval = struct.unpack_from(">H", header, pos + 4)[0]
        pos += 2 + seg
        if marker == 0xDA:
            break
    pos = 2
    while True:
        marker, seg = header[pos + 1], struct.unpack_from(">H", header, pos + 2)[0]
        if 0xC0 <= marker <= 0xC3:
            struct.pack_into(">HH", header, pos + 5, 8 * vmax, interval * 8 * hmax)
            break
        pos += 2 + seg
    ends = starts[1:] + [len(jpeg)]
    return [bytes(header) + jpeg[a:b - 1] + b"\xd9" for a, b in zip(starts, ends)]


def tiling(path, table: Table, ncores: int) -> None:
    import tilewise

    slide = tilewise.open(path)
    w0, h0 = slide.dimensions
    grid = np.array([(x, y) for y in range(0, h0 - 255, 256) for x in range(0, w0 - 255, 256)], np.int64)
    units = unit_streams(path)
    for threads in (1, ncores):
        name = f"tiling level 0 ({w0}x{h0}), {threads} thread{'s' if threads > 1 else ''}"
        tilewise.set_worker_threads(threads)

        def run():
            for _ in slide.read_regions(grid, (256, 256), batch_size=64, num_workers=threads, prefetch=2):
                pass
        t = time_runs(run, 3)
        mpix = len(grid) * 65536 / 1e6
        table.add(name, "tilewise (loader)", mpix / t["median"], mpix / t["max"], mpix / t["min"], "MPix/s",
                  "read_regions, batch 64, default cache")
        c = jpeg_ceiling(units, threads=threads, reps=3)
        table.add(name, "libjpeg-turbo ceiling", c["mpix_per_s"], float("nan"), float("nan"), "MPix/s",
                  f"{len(units)} units decoded whole from memory")
    tilewise.set_worker_threads(0)


def main() -> None:
    ap = bench_parser(reps=5, patches=300)
    ap.add_argument("--child", nargs=5, metavar=("TOOL", "PATH", "THREADS", "PATCHES", "REPS"))
    args = ap.parse_args()
    if args.child:
        tool, path, threads, patches, reps = args.child
        print(json.dumps(random_patch_rates(tool, path, int(threads), int(patches), int(reps))))
        return
    width, height = (16384, 2048) if args.quick else (61440, 4096)
    if args.quick:
        args.patches, args.reps = 60, 3
    ncores = os.cpu_count() or 1
    table = Table(f"CPU, {ncores} cores: Hamamatsu NDPI, level 0 one {width}x{height} JPEG (4:2:2), random 256x256 "
                  "patches, caches off, each tool in its own process")
    for ri, threads in [(ri, t) for ri in (64, 256) for t in (1, ncores)]:
        path = ndpi_slide(width, height, ri)
        name = f"units {ri * 16}x8, {threads} thread{'s' if threads > 1 else ''}"
        for tool in ("tilewise", "tilewise-cold", "tilewise-noindex", "OpenSlide"):
            child_row(table, name, tool, [sys.executable, __file__, "--child", tool.lower(), str(path), str(threads),
                                          str(args.patches), str(args.reps)])
    tiling(ndpi_slide(width, height, 64), table, ncores)
    publish(table, "ndpi.md")


if __name__ == "__main__":
    main()
