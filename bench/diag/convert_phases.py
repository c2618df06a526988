"""Where a conversion on the GPU spends its time, in one process: the GPU's start (CUDA's context,
nvImageCodec's library), the first read to the device (the decode lanes and their warm-up), level-0 bands
of 256 rows read to the device and to host memory (as convert reads them, with the tiles the GPU's lanes
decoded for each), then two conversions to a pyramidal TIFF (256^2 JPEG q90) one after the other, the
second with everything already loaded. Run it under each setting to compare (scripts/gpu/measure.sh
phases); prints one JSON line.

    usage: convert_phases.py SLIDE OUTPUT_DIR"""
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import tilewise


def lane_tiles() -> int:
    return tilewise._core.gpu_stats(0)["gpu_tiles"]


def main() -> int:
    slide, out_dir = sys.argv[1], Path(sys.argv[2])
    result: dict = {}
    start = time.perf_counter()
    tilewise._gpu.configure()
    status = tilewise._core.gpu_status(0)  # CUDA's context and nvImageCodec's library
    result["gpu_status_s"] = round(time.perf_counter() - start, 3)
    if not status.ok:
        raise SystemExit(f"no usable GPU: {status}")
    with tilewise.open(slide) as s:
        width = s.dimensions[0]
        start = time.perf_counter()
        s.read_region((0, 0), (512, 512), device="cuda")
        result["first_device_read_s"] = round(time.perf_counter() - start, 3)
        for device in ("cuda", "cpu"):
            reads = []
            for k in range(6):
                before = lane_tiles()
                start = time.perf_counter()
                s.read_region((0, 1024 + 256 * k), (width, 256), device=device)
                reads.append({"ms": round((time.perf_counter() - start) * 1e3, 1), "lane_tiles": lane_tiles() - before})
            result[f"band_reads_{device}"] = reads
    for k in (1, 2):
        tmp = Path(tempfile.mkdtemp(dir=out_dir))
        try:
            before = lane_tiles()
            start = time.perf_counter()
            tilewise.convert(slide, tmp / "out.tif", codec="jpeg", quality=90, tile_size=256, device="cuda")
            result[f"convert_{k}_s"] = round(time.perf_counter() - start, 2)
            result[f"convert_{k}_lane_tiles"] = lane_tiles() - before
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
