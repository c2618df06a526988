"""Channels at their own sample type against slideio 2.10 and bioio (its format plugin): a 4-channel uint16
OME-TIFF (tifffile, deflate, 512-pixel tiles, SubIFD pyramid), a 4-channel GRAY16 Zeiss CZI (uncompressed
1024-pixel subblocks, pyramid subblocks: slideio 2.10 reads no zstd CZI), a 4-channel uint16 Akoya QPTIFF
(LZW 512-pixel tiles, a directory per channel and level) and a 4-channel uint16 Olympus VSI (raw 512-pixel
ETS tiles, the ETS pyramid; bioio-vsi is not run: it reads through Bio-Formats, whose jars it fetches from
Maven) and a DICOM WSI series of 4 uint16 optical paths (JPEG 2000 lossless 512-pixel frames, one instance per
level; its peer is wsidicom, the field's DICOM WSI reader: slideio 2.10's DCM driver reads a file as one image
and cannot decompress multi-frame JPEG 2000, bioio has no DICOM plugin), of real tissue (`ihc.png` tiled,
its colour channels and their inverses scaled to 16 bits; generated once into bench/data). Workloads: random
256x256 level-0 patches of one channel and of all channels (a repetition ends after its patches or 15 s), and
one whole channel at level 0 (tilewise also on every core, "tilewise-cores", its default for one region);
caches off, one reading thread, each tool and workload in its own process.

slideio and bioio (with bioio-ome-tiff, bioio-czi and bioio-qptiff) run in a virtual environment of their own
(build/bench-peers, made on first use from PyPI): bioio-czi needs pylibCZIrw, which declares the cmake
package as a dependency that would take the build's place in .venv. A peer that cannot be installed or
fails is a FAILED row.

wsidicom runs in .venv (a test dependency of tilewise).

    bench_planes.py [--patches N] [--reps R] [--quick] [--only NAME...]"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import numpy as np

from common import bench_parser, DATA, REPO, Table, child_row, peak_rss_mib, publish, slidegen

sys.path.insert(0, str(REPO / "tests" / "data"))

PEERS = REPO / "build" / "bench-peers"
PEER_PACKAGES = ["slideio==2.10.*", "bioio>=3", "bioio-ome-tiff>=1.4", "bioio-czi>=3", "bioio-qptiff>=0.1"]
CHANNELS = 4
BUDGET_S = 15.0  # longest repetition of random patches


def world(size: int) -> np.ndarray:
    """(C, size, size) uint16: the tissue's R, G, B and the inverse of its grey, x 257."""
    block = slidegen.ihc_tissue(min(size, 4096), min(size, 4096), seed=5)
    tissue = np.tile(block, (size // block.shape[0] + 1, size // block.shape[1] + 1, 1))[:size, :size]
    planes = [tissue[..., c] for c in range(3)] + [255 - tissue.mean(axis=2).astype(np.uint8)]
    return np.stack([p.astype(np.uint16) * 257 for p in planes])


def slides(size: int) -> dict:
    """name -> (path, what it is, slideio driver, bioio reader module); generated on first use. The DICOM
    series' driver is "" (slideio not run) and its peer wsidicom."""
    folder = DATA / f"planes_{size}"
    folder.mkdir(parents=True, exist_ok=True)
    made = {
        "OME-TIFF": (folder / "slide.ome.tif", "deflate, 512-pixel tiles", "OMETIFF", "bioio_ome_tiff"),
        "Zeiss CZI": (folder / "slide.czi", "uncompressed 1024-pixel subblocks", "CZI", "bioio_czi"),
        "Akoya QPTIFF": (folder / "slide.qptiff", "LZW 512-pixel tiles", "QPTIFF", "bioio_qptiff"),
        "Olympus VSI": (folder / "slide.vsi", "raw 512-pixel ETS tiles", "VSI", ""),
        "DICOM WSI": (folder / "dicom", "JPEG 2000 lossless 512-pixel frames", "", ""),
    }
    data = None
    for name, (path, *_rest) in made.items():
        done = path.with_name(path.name + ".complete")
        if done.exists():
            continue
        import czi
        import dicom_wsi
        import qptiff
        import tifffile
        import vsi

        print(f"generating {folder.name}/{path.name} ...", flush=True)
        data = world(size) if data is None else data
        if name == "OME-TIFF":
            opts = dict(tile=(512, 512), compression="zlib", photometric="minisblack")
            with tifffile.TiffWriter(path, bigtiff=True, ome=True) as tw:
                tw.write(data, subifds=2, metadata={"axes": "CYX"}, **opts)
                for level in (1, 2):
                    tw.write(data[:, ::2 ** level, ::2 ** level], subfiletype=1, **opts)
        elif name == "Zeiss CZI":
            path.write_bytes(czi.build_czi(data[None, :, None], tile=1024, levels=3, compression=0, tint=0,
                                           scenes=((0, 0, size // 1024, size // 1024),), origin=(0, 0)))
        elif name == "Akoya QPTIFF":
            qptiff.write_qptiff(path, data, names=["R", "G", "B", "inverse grey"], levels=3, tile=512)
        elif name == "Olympus VSI":
            vsi.write_vsi(path, data[:, None], tile=512, codec="raw", levels=3)
        else:
            path.mkdir(exist_ok=True)
            series = dicom_wsi.new_series()
            for level in range(3):
                image_type = ("ORIGINAL", "PRIMARY", "VOLUME", "NONE") if level == 0 else \
                    ("DERIVED", "PRIMARY", "VOLUME", "RESAMPLED")
                dicom_wsi.write_instance(path / f"level{level}.dcm",
                                         np.ascontiguousarray(data[:, None, ::2 ** level, ::2 ** level]), series=series,
                                         tile=512, codec="jpeg2000-lossless", image_type=image_type,
                                         spacing_mm=0.00025 * 2 ** level, instance_number=level + 1,
                                         paths=[{"id": str(c)} for c in range(CHANNELS)])
        done.write_text("")
    return made


def peers_python() -> str:
    """The peers' interpreter, their environment made (and its packages installed) on first use."""
    python = PEERS / "bin" / "python"
    stamp = PEERS / ".installed"
    if not stamp.exists() or stamp.read_text() != " ".join(PEER_PACKAGES):
        subprocess.run([sys.executable, "-m", "venv", str(PEERS)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *PEER_PACKAGES], check=True)
        stamp.write_text(" ".join(PEER_PACKAGES))
    return str(python)


def reader(tool: str, path: str, driver: str, plugin: str):
    """(read(x, y, w, h, channels) -> array, level-0 (width, height)) for one tool's intended path."""
    if tool.startswith("tilewise"):
        import os

        import tilewise

        tilewise.set_cache_capacity(0)
        # "tilewise-cores": a whole channel decoded on every core, as read_region does by default
        tilewise.set_worker_threads((os.cpu_count() or 1) if tool == "tilewise-cores" else 1)
        slide = tilewise.open(path)

        def read(x, y, w, h, channels):
            return slide.read_region((x, y), (w, h), c=channels)

        return read, slide.dimensions
    if tool == "wsidicom":
        import dataclasses

        from wsidicom import WsiDicom
        from wsidicom.config import get_settings, set_default_settings

        # caches off, as every tool runs here: its decoded and encoded frame caches (100 MB each by default)
        set_default_settings(dataclasses.replace(get_settings(), decoded_frame_cache_size=0, encoded_frame_cache_size=0))
        wsi = WsiDicom.open(path)

        def read(x, y, w, h, channels):  # one optical path per call, as its API reads them
            return np.stack([np.asarray(wsi.read_region((x, y), 0, (w, h), path=str(c))) for c in channels], axis=-1)

        return read, (wsi.size.width, wsi.size.height)
    if tool == "slideio":
        import slideio

        scene = slideio.open_slide(path, driver).get_scene(0)
        _, _, width, height = scene.rect

        def read(x, y, w, h, channels):  # rectangles in the scene's own frame
            return scene.read_block((x, y, w, h), channel_indices=list(channels))

        return read, (width, height)
    import importlib

    from bioio import BioImage

    image = BioImage(path, reader=importlib.import_module(plugin).Reader)
    planes = image.get_image_dask_data("CYX", T=0, Z=0)
    _, height, width = planes.shape

    def read(x, y, w, h, channels):
        return np.moveaxis(planes[list(channels), y:y + h, x:x + w].compute(scheduler="synchronous"), 0, -1)

    return read, (width, height)


def child(tool: str, path: str, driver: str, plugin: str, workload: str, patches: int, reps: int) -> dict:
    read, (width, height) = reader(tool, path, driver, plugin)
    rng = np.random.default_rng(0)
    channels = [0] if workload != "patch-all" else list(range(CHANNELS))
    locs = [(int(rng.integers(0, width - 256)), int(rng.integers(0, height - 256))) for _ in range(patches)]
    check = read(1000, 700, 64, 48, channels)  # every tool's pixels are the same source
    rates = []
    for rep in range(reps + 1):
        # a repetition of patches ends after its patches or BUDGET_S seconds (the warm-up after a fifth of
        # that), whichever comes first: the slowest peers read a few patches a second
        budget = BUDGET_S if rep else BUDGET_S / 5
        t = time.perf_counter()
        if workload == "plane":
            read(0, 0, width, height, [0])
            done = 1
        else:
            done = 0
            for x, y in locs:
                read(x, y, 256, 256, channels)
                done += 1
                if time.perf_counter() - t > budget:
                    break
        if rep:  # the first is a warm-up
            elapsed = time.perf_counter() - t
            rates.append(done / elapsed if workload != "plane" else elapsed * 1000)
    return {"rates": rates, "peak_mib": peak_rss_mib(), "checksum": int(np.asarray(check, np.int64).sum())}


def main() -> None:
    ap = bench_parser(reps=5, patches=300)
    ap.add_argument("--only", nargs="+", metavar="NAME", help="formats to run (OME-TIFF, Zeiss, Akoya, Olympus, DICOM)")
    ap.add_argument("--child", nargs=6, metavar=("TOOL", "PATH", "DRIVER", "PLUGIN", "WORKLOAD", "N"))
    args = ap.parse_args()
    if args.child:
        tool, path, driver, plugin, workload, n = args.child
        print(json.dumps(child(tool, path, driver, plugin, workload, int(n), args.reps)))
        return
    size = 2048 if args.quick else 8192
    if args.quick:
        args.patches, args.reps = 40, 3
    try:
        peers_env = peers_python()
    except (subprocess.CalledProcessError, OSError) as e:
        peers_env = None
        print(f"the peers' environment could not be made: {e}", file=sys.stderr)
    table = Table(f"CPU, 2 cores: channels of {size}x{size} uint16 images ({CHANNELS} channels), random 256x256 "
                  "level-0 patches and one whole channel at level 0, caches off, one reading thread, each tool and "
                  "workload in its own process")
    for name, (path, what, driver, plugin) in slides(size).items():
        if args.only and not any(word.lower() in name.lower() for word in args.only):
            continue
        for workload, label, unit in (("patch-one", "patches of channel 0", "patches/s"),
                                      ("patch-all", f"patches of all {CHANNELS} channels", "patches/s"),
                                      ("plane", "channel 0 whole at level 0", "ms")):
            peers = ("wsidicom",) if name == "DICOM WSI" else ("slideio", "bioio")
            tools = ("tilewise", "tilewise-cores") + peers if workload == "plane" else ("tilewise",) + peers
            for tool in tools:
                if tool == "bioio" and not plugin:
                    table.add(f"{name} ({what}): {label}", "bioio not run (no plugin without Bio-Formats)", float("nan"),
                              float("nan"), float("nan"), unit)
                    continue
                python = sys.executable if tool.startswith("tilewise") or tool == "wsidicom" else peers_env
                row = f"{name} ({what}): {label}"
                if python is None:
                    table.add(row, f"{tool} FAILED (no environment)", float("nan"), float("nan"), float("nan"), unit)
                    continue
                child_row(table, row, tool, [python, __file__, "--reps", str(args.reps if workload != "plane" else 3),
                                             "--child", tool, str(path), driver, plugin, workload,
                                             str(args.patches)], unit=unit)
    publish(table, "planes.md")


if __name__ == "__main__":
    main()
