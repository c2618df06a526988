"""DICOMweb reads: the benchmark slide (bench/common.benchmark_slide, libvips JPEG q80, 256^2 tiles) as a DICOM
WSI series (`tilewise.convert(..., format="dicom", copy_tiles=True)`: the same JPEG tiles as frames) stored in
Orthanc 1.10 with its DICOMweb plugin (Debian's packages, tests/python/orthanc_server.py) on the loopback
address, behind tests/data/fault_proxy.py adding 20 ms per response. Each tool in its own process:

- tilewise: `tilewise.open(<series URL>)`, read_region per patch (and the batch loader, read_regions);
- wsidicom: `WsiDicom.open_web` through its `WsiDicomWebClient` (dicomweb-client), frames asked for in their
  stored syntax (JPEG baseline), read_region per patch;
- ez-wsi-dicomweb: `DicomSlide` through `DicomWebInterface` without credentials, get_patch(...).image_bytes(),
  in a virtual environment of its own (bench/.venv-ezwsi: its dataclasses-json pins marshmallow < 4, which
  wsidicom 0.36 cannot import), created on first use.

Workloads: open (seconds per open and requests per open), random 256x256 level-0 patches with tile caches off
on 1 and 8 threads (patches/s, and per patch the requests and bytes the proxy counted against a perfect
reader's: the compressed frames each patch touches).

    bench_dicomweb.py [--size N] [--patches N] [--reps R] [--quick] [--tools a,b] [--latency MS]"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np

from common import DATA, REPO, Table, bench_parser, benchmark_slide, publish, read_all

sys.path.insert(0, str(REPO / "tests" / "data"))
sys.path.insert(0, str(REPO / "tests" / "python"))
import servers  # noqa: E402

EZWSI_VENV = REPO / "bench" / ".venv-ezwsi"


def series_folder(size: int) -> Path:
    """The benchmark slide as a DICOM series (cached under bench/data/)."""
    import tilewise

    folder = DATA / f"dicomweb_{size}"
    if not (folder / "done").exists():
        source = benchmark_slide(size)
        tmp = DATA / f"dicomweb_{size}.partial"
        if tmp.exists():
            import shutil

            shutil.rmtree(tmp)
        tilewise.convert(source, tmp, format="dicom", copy_tiles=True)
        (tmp / "done").write_text("")
        tmp.rename(folder)
    return folder


def level0(folder: Path) -> Path:
    import pydicom

    best = None
    for f in folder.glob("*.dcm"):
        ds = pydicom.dcmread(f, stop_before_pixels=True)
        if ds.ImageType[2] == "VOLUME" and (best is None or ds.TotalPixelMatrixColumns > best[1]):
            best = (f, ds.TotalPixelMatrixColumns)
    return best[0]


def locations(w: int, h: int, n: int, seed: int = 7) -> list:
    rng = np.random.default_rng(seed)
    return [(int(rng.integers(0, w - 256)), int(rng.integers(0, h - 256))) for _ in range(n)]


def perfect_bytes(path: Path, locs: list) -> float:
    """Per patch, the compressed bytes of the distinct level-0 frames the patches touch (a reader that keeps
    what it fetched needs each once)."""
    import pydicom
    from pydicom.encaps import generate_frames

    ds = pydicom.dcmread(path)
    sizes = [len(f) for f in generate_frames(ds.PixelData, number_of_frames=int(ds.NumberOfFrames))]
    across = -(-int(ds.TotalPixelMatrixColumns) // int(ds.Columns))
    t = int(ds.Columns)
    touched = {r * across + c for x, y in locs for r in range(y // t, (y + 255) // t + 1)
               for c in range(x // t, (x + 255) // t + 1)}
    return sum(sizes[i] for i in touched) / len(locs)


def ezwsi_python() -> str:
    if not (EZWSI_VENV / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(EZWSI_VENV)], check=True)
        subprocess.run([str(EZWSI_VENV / "bin" / "python"), "-m", "pip", "install", "-q", "ez-wsi-dicomweb>=6.0"],
                       check=True)
    return str(EZWSI_VENV / "bin" / "python")


def child(tool: str, base: str, study: str, series: str, kind: str, threads: int, n: int, reps: int) -> dict:
    url = f"{base}/dicom-web/studies/{study}/series/{series}"
    if tool == "tilewise":
        import tilewise

        tilewise.set_cache_capacity(0)
        tilewise.set_worker_threads(1)
        open_slide = lambda: tilewise.open(url)  # noqa: E731
        reader = lambda s: (lambda loc: s.read_region(loc, (256, 256)))  # noqa: E731
        dims = lambda s: s.dimensions  # noqa: E731
    elif tool == "wsidicom":
        import wsidicom
        from pydicom.uid import JPEGBaseline8Bit

        def open_slide():
            client = wsidicom.WsiDicomWebClient.create_client(base, "dicom-web", "dicom-web")
            return wsidicom.WsiDicom.open_web(client, study, series, requested_transfer_syntax=JPEGBaseline8Bit)

        reader = lambda s: (lambda loc: np.asarray(s.read_region(loc, 0, (256, 256))))  # noqa: E731
        dims = lambda s: (s.size.width, s.size.height)  # noqa: E731
    else:
        from ez_wsi_dicomweb import credential_factory, dicom_slide, dicom_web_interface
        from ez_wsi_dicomweb.ml_toolkit import dicom_path

        def open_slide():
            dwi = dicom_web_interface.DicomWebInterface(credential_factory.NoAuthCredentialsFactory())
            return dicom_slide.DicomSlide(dwi, dicom_path.FromString(url))

        reader = lambda s: (lambda loc: s.get_patch(s.native_level, loc[0], loc[1], 256, 256).image_bytes())  # noqa: E731
        dims = lambda s: (s.native_level.width, s.native_level.height)  # noqa: E731
    if kind == "open":
        times = []
        for _ in range(n):
            t = time.perf_counter()
            s = open_slide()
            times.append(time.perf_counter() - t)
            del s
        return {"seconds": times}
    s = open_slide()
    w, h = dims(s)
    rates = []
    for rep in range(reps):
        locs = locations(w, h, n, seed=7 + rep)  # patches not read before: no frame is cached
        t = time.perf_counter()
        if kind == "loader":
            for _ in s.read_regions(np.asarray(locs), (256, 256), batch_size=64, num_workers=threads):
                pass
        else:
            read_all(reader(s), locs, threads)
        rates.append(n / (time.perf_counter() - t))
    return {"rates": rates}


def run_child(python: str, args: list) -> dict:
    p = subprocess.run([python, __file__, "--child", *map(str, args)], capture_output=True, text=True,
                       cwd=str(REPO / "bench"))
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        return {"error": (p.stderr.strip() or "no output").splitlines()[-1][-240:], "exit": p.returncode}
    return json.loads(lines[-1])


def main() -> None:
    ap = bench_parser(reps=3, size=10240, patches=100)
    ap.add_argument("--tools", default="tilewise,wsidicom,ez-wsi-dicomweb", help="comma-separated tools")
    ap.add_argument("--latency", type=int, default=20, help="injected latency per response (ms)")
    ap.add_argument("--child", nargs=8, metavar=("TOOL", "BASE", "STUDY", "SERIES", "KIND", "THREADS", "N", "REPS"))
    args = ap.parse_args()
    if args.child:
        tool, base, study, series, kind, threads, n, reps = args.child
        print(json.dumps(child(tool, base, study, series, kind, int(threads), int(n), int(reps))))
        return
    if args.quick:
        args.size, args.patches, args.reps = 4096, 30, 1
    import pydicom
    from orthanc_server import OrthancServer

    folder = series_folder(args.size)
    first = level0(folder)
    ds = pydicom.dcmread(first, stop_before_pixels=True)
    study, series = ds.StudyInstanceUID, ds.SeriesInstanceUID
    w, h = int(ds.TotalPixelMatrixColumns), int(ds.TotalPixelMatrixRows)
    state = Path(tempfile.mkdtemp(prefix="bench-dicomweb-"))
    server = OrthancServer(state / "orthanc")
    proxy = None
    table = Table(f"CPU, {os.cpu_count()} cores: a {w}x{h} DICOM series (JPEG q80, 256^2 frames) over DICOMweb from "
                  f"Orthanc 1.10 behind {args.latency} ms of latency per response, each tool in its own process",
                  base_tool="tilewise")
    try:
        for f in sorted(folder.glob("*.dcm")):
            urllib.request.urlopen(urllib.request.Request(server.url + "/instances", data=f.read_bytes(),
                                                          method="POST"), timeout=120).read()
        proxy, base = servers.fault_proxy(server.url, state, latency_ms=args.latency)
        perfect = perfect_bytes(first, [loc for rep in range(args.reps)
                                        for loc in locations(w, h, args.patches, seed=7 + rep)])
        tools = args.tools.split(",")
        pythons = {t: ezwsi_python() if t == "ez-wsi-dicomweb" else sys.executable for t in tools}

        open_requests = {}  # per tool: what an open costs, taken off the patches' counts (each child opens once)

        def row(name, tool, label, kind, threads, n, reps, per):
            before = servers.proxy_stats(base)
            r = run_child(pythons[tool], [tool, base, study, series, kind, threads, n, reps])
            after = servers.proxy_stats(base)
            unit = "ms" if kind == "open" else "patches/s"
            if "error" in r:
                table.add(name, f"{label} FAILED (exit {r['exit']})", float("nan"), float("nan"), float("nan"), unit,
                          r["error"])
                return
            values = sorted(1000 * t for t in r["seconds"]) if kind == "open" else sorted(r["rates"])
            count = n * (1 if kind == "open" else reps)
            requests = after["requests"] - before["requests"]
            fetched = after["bytes"] - before["bytes"]
            if kind == "open":
                open_requests[tool] = (requests / count, fetched / count)
            else:
                requests -= open_requests.get(tool, (0, 0))[0]
                fetched -= open_requests.get(tool, (0, 0))[1]
            requests, fetched = requests / count, fetched / count
            note = (f"{requests:.1f} requests per open" if kind == "open" else
                    f"{requests:.2f} requests and {fetched / 1024:.0f} KiB per patch ({fetched / perfect:.2f}x the "
                    f"{perfect / 1024:.0f} KiB of the distinct frames the patches touch)")
            table.add(name, label, float(np.median(values)), values[0], values[-1], unit, note)

        for tool in tools:
            row("open", tool, tool, "open", 1, 5 if not args.quick else 2, 1, None)
        for threads in (1, 8):
            name = f"random 256x256 patches, {threads} thread{'s' if threads > 1 else ''}"
            for tool in tools:
                row(name, tool, tool, "patches", threads, args.patches, args.reps, None)
            if "tilewise" in tools:
                row(name, "tilewise", f"tilewise read_regions ({threads} worker{'s' if threads > 1 else ''})", "loader",
                    threads, args.patches, args.reps, None)
    finally:
        servers.stop(proxy)
        server.stop()
    publish(table, "dicomweb.md")


if __name__ == "__main__":
    main()
