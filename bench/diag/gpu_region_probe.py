"""What bounds one large device region on the GPU: the raw decode rate of tilewise's
nvImageCodec backend when one region's worth of tiles goes to few decoders in large batches (as one region
would, rather than the loader's many small calls in flight), beside cuCIM's cuslide2 reading the same
4096^2 region in its own process. A diagnosis, not a table: prints one line per measurement.

Run on the GPU machine after scripts/gpu/test.sh's set-up (AB_ONLY_SETUP=1), from bench/:
    python3 gpu_region_probe.py [--seconds S]
    python3 gpu_region_probe.py --cucim-only    (only cuCIM's row: scripts/gpu/measure.sh regionpair)"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]  # bench/: common, the workloads
sys.path.insert(0, str(HERE))
from common import jpeg_tiles  # noqa: E402

SLIDE = Path(os.environ.get("TILEWISE_GPU_DATA", HERE.parent / ".gpu" / "data")) / "bench_ihc_6144.tif"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=2.0)
    args = ap.parse_args()
    import tilewise
    import tilewise._bench

    tilewise._gpu.configure()
    tilewise._core.gpu_status(0)  # loads nvImageCodec through _core first, as bench_gpu.py does
    # The tiles of ab_child.py's region: 4096^2 at (512, 512), tile columns and rows 2-17 of the 256^2 grid.
    import tifffile

    with tifffile.TiffFile(SLIDE) as tf:
        across = -(-tf.pages[0].imagewidth // tf.pages[0].tilewidth)
    indices = [row * across + col for row in range(2, 18) for col in range(2, 18)]
    streams = jpeg_tiles(SLIDE, 0, indices)
    print(f"{len(streams)} tiles of the region, {sum(map(len, streams)) / len(streams) / 1024:.1f} KiB each", flush=True)
    for threads, batch in ((1, 64), (1, 128), (1, 256), (2, 128), (4, 64), (8, 32), (16, 16)):
        rate, took = tilewise._bench.decode_rate(streams, 256, 256, threads=threads, batch=batch, seconds=args.seconds)
        print(f"raw decode, {threads} decoder(s), batches of {batch}: {rate:,.0f} tiles/s = "
              f"{rate * 65536 / 1e6:,.0f} MPix/s (timed {took:.1f} s)", flush=True)
    # One region read's shape: the 256 tiles decoded once per round by decoders that start together, each
    # its contiguous share in `calls` calls, into the region's buffer (in place) or compact tiles.
    for threads, calls, in_place in ((1, 1, True), (2, 1, True), (4, 1, True), (8, 1, True), (16, 1, True),
                                     (4, 1, False), (8, 1, False), (4, 4, True), (8, 2, True), (8, 4, True),
                                     (16, 2, True)):
        med, lo, hi = tilewise._bench.shot_rate(streams, 256, 256, cols=16, threads=threads, calls=calls,
                                                in_place=in_place)
        mpix = len(streams) * 65536 / 1e6
        print(f"one round, {threads} decoder(s) x {calls} call(s), {'in place' if in_place else 'compact'}: "
              f"{med * 1e3:.2f} ms ({lo * 1e3:.2f}-{hi * 1e3:.2f}) = {mpix / med:,.0f} MPix/s", flush=True)
    cucim_region()


def cucim_region() -> None:
    """cuCIM's cuslide2 reading the same region, in its own process (one line)."""
    site = os.environ.get("TILEWISE_CUCIM_SITE")
    if not site or not Path(site).is_dir():
        print("cuCIM region: not run (TILEWISE_CUCIM_SITE has no site)")
        return
    from bench_gpu import cucim_env

    p = subprocess.run([sys.executable, str(HERE / "bench_cucim_gpu.py"), str(SLIDE), "16", "region"],
                       env=dict(cucim_env(site), ENABLE_CUSLIDE2="1"), capture_output=True, text=True)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("[")]
    if p.returncode != 0 or not lines:
        print(f"cuCIM cuslide2 region: FAILED (exit {p.returncode}): {p.stderr.strip()[-300:]}")
        return
    for row in json.loads(lines[-1]):
        print(f"cuCIM region: {row['tool']}: {row['value']:,.0f} {row['unit']} ({row['lo']:,.0f}-{row['hi']:,.0f})")


if __name__ == "__main__":
    if sys.argv[1:] == ["--cucim-only"]:
        cucim_region()
    else:
        main()
