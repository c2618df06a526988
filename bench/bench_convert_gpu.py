"""Writing slides on the GPU: `tilewise.convert(..., device="cuda")` against tilewise's own CPU path on every
core, same input, same options: the 40,960^2 benchmark slide (bench/make_large_slide.py: real IHC texture,
256^2 JPEG q80 tiles), written as 256^2 JPEG q90 YCbCr 4:2:0 tiles with a full pyramid, as a pyramidal TIFF and
as a DICOM WSI series.

The GPU path: level 0 read to device memory in bands (its JPEG tiles decoded by the GPU's engines), each level
halved by a kernel and its tiles encoded by nvImageCodec (nvJPEG's CUDA encoder); the CPU path: the same bands
decoded, halved and encoded by libjpeg-turbo on the worker pool (every core).

Each run is a process of its own (started from a small launcher, its peak RSS and CPU time its own, from
wait4), the two alternating round by round, the first round a warm-up; timed from start to exit (the GPU's
start and nvImageCodec's included), with the convert call's own seconds beside it. Outputs go to /dev/shm
(the disk's speed is not the converters'), are checked (levels counted, level 0's size) and removed.

    bench_convert_gpu.py [--slide NAME] [--rounds R] [--formats tiff,dicom] [--gpu-variants "- VAR=value,..."]"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

from common import Table, launched, publish

HERE = Path(__file__).resolve().parent
DATA = Path(os.environ.get("TILEWISE_GPU_DATA", HERE.parent / ".gpu" / "data"))

# One conversion, in this process; prints {"seconds": convert call, "gpu_tiles", "cpu_tiles": source tiles the
# GPU's lanes and the reading threads decoded} as its last line.
CHILD = """
import json, sys, time
import tilewise
src, out, device, fmt = sys.argv[1:5]
start = time.perf_counter()
tilewise.convert(src, out, format=fmt, codec="jpeg", quality=90, tile_size=256, device=device)
seconds = time.perf_counter() - start
stats = tilewise._core.gpu_stats(0) if device == "cuda" else {"gpu_tiles": 0, "cpu_tiles": 0}
print(json.dumps({"seconds": seconds, "gpu_tiles": stats["gpu_tiles"], "cpu_tiles": stats["cpu_tiles"]}))
"""

def run(src: Path, out: Path, device: str, fmt: str, settings: list[str]) -> dict:
    p, r = launched(["env", *settings, sys.executable, "-c", CHILD, str(src), str(out), device, fmt])
    results = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if not results:
        raise RuntimeError(f"{device} {fmt} printed no result: {p.stderr.strip()[-400:]}")
    child = json.loads(results[-1])
    return dict(r, call=child["seconds"], gpu_tiles=child["gpu_tiles"], cpu_tiles=child["cpu_tiles"])


def check(out: Path, fmt: str, width: int, height: int) -> str:
    """What was written, so that a run that writes less is not faster by it."""
    import tilewise

    if fmt == "dicom":
        instances = sorted(out.glob("*.dcm"))
        with tilewise.open(instances[0]) as s:
            assert s.dimensions == (width, height), s.dimensions
            return f"{len(instances)} instances, {s.level_count} levels"
    with tilewise.open(out) as s:
        assert s.dimensions == (width, height), s.dimensions
        return f"{s.level_count} levels"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--slide", default="bench_ihc_40960.tif")
    ap.add_argument("--rounds", type=int, default=4, help="rounds after the warm-up one")
    ap.add_argument("--formats", default="tiff,dicom")
    ap.add_argument("--gpu-variants", default="-",
                    help='GPU runs under each of these settings: space-separated "VAR=value,VAR=value" or "-" (none)')
    args = ap.parse_args()
    src = DATA / args.slide
    if not src.exists():
        sys.exit(f"{src} is missing: write it with bench/make_large_slide.py (scripts/gpu/measure.sh large)")
    import tilewise

    with tilewise.open(src) as s:
        width, height = s.dimensions
    megapixels = width * height / 1e6
    cpu_tool = f"tilewise CPU ({os.cpu_count()} cores)"
    tools = {cpu_tool: ("cpu", [])}
    for variant in args.gpu_variants.split():
        settings = [] if variant == "-" else variant.split(",")
        tools["tilewise GPU" + (f" ({' '.join(settings)})" if settings else "")] = ("cuda", settings)
    table = Table(f"convert on the GPU and on {os.cpu_count()} cores: {args.slide} ({width:,} x {height:,}), 256^2 JPEG q90 "
                  "4:2:0, full pyramid", base_tool=cpu_tool)
    for fmt in args.formats.split(","):
        runs: dict[str, list[dict]] = {tool: [] for tool in tools}
        for r in range(args.rounds + 1):
            for tool, (device, settings) in tools.items():
                tmp = Path(tempfile.mkdtemp(dir="/dev/shm" if os.path.isdir("/dev/shm") else None))
                out = tmp / ("series" if fmt == "dicom" else "out.tif")
                try:
                    result = run(src, out, device, fmt, settings)
                    result["written"] = check(out, fmt, width, height)
                    result["bytes"] = sum(f.stat().st_size for f in ([out] if out.is_file() else out.glob("*")))
                finally:
                    shutil.rmtree(tmp, ignore_errors=True)
                print(f"{fmt} {tool} round {r}: {json.dumps(result)}", flush=True)
                if r > 0:
                    runs[tool].append(result)
        cpu_median = float(np.median([x["wall"] for x in runs[cpu_tool]]))
        for tool, (device, _) in tools.items():
            walls = sorted(x["wall"] for x in runs[tool])
            calls = sorted(x["call"] for x in runs[tool])
            median = float(np.median(walls))
            cores = np.median([x["cpu"] / x["wall"] for x in runs[tool]])
            peak = max(x["peak_mib"] for x in runs[tool])
            last = runs[tool][-1]
            note = ""
            if device == "cuda":  # who decoded the source's tiles: the GPU's lanes, or reading threads helping
                note = (f"{cpu_median / median:.2f}x the CPU path; source tiles decoded by the GPU "
                        f"{last['gpu_tiles']:,}, by CPU helpers {last['cpu_tiles']:,}; ")
            table.add(fmt, tool, median, walls[0], walls[-1], "s",
                      f"{note}{megapixels / median:,.0f} Mpx/s; convert call {np.median(calls):.2f} s "
                      f"({calls[0]:.2f}-{calls[-1]:.2f}); {cores:.1f} host cores; peak RSS {peak:,.0f} MiB; "
                      f"{last['written']}, {last['bytes'] / 2**20:,.0f} MiB")
    publish(table, "convert_gpu.md")


if __name__ == "__main__":
    main()
