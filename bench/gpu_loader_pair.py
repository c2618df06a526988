"""tilewise's and cuCIM's (cuslide2) batch loaders to device, alternating in separate processes on the same
slide and locations (bench_gpu.py's), ROUNDS rounds: the loader rows of bench_gpu.py alone, for a quick
side-by-side on the lent GPU machine after scripts/gpu-test.sh's set-up.
    gpu_loader_pair.py [ROUNDS] [WORKERS ...]     (default 2 rounds, workers 4 and 16)"""

from __future__ import annotations

import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_gpu as b  # noqa: E402


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    workers = [int(w) for w in sys.argv[2:]] or [4, 16]
    site = os.environ["TILEWISE_CUCIM_SITE"]
    got: dict = {}
    for _ in range(rounds):
        for w in workers:
            for tool in ("tilewise", "cuCIM cuslide2"):
                try:
                    if tool == "tilewise":
                        r = b.subprocess_json([str(b.HERE / "bench_gpu.py"), "--loader", str(w)], dict(os.environ), "tw")
                        value = r["median"]
                    else:
                        rows = b.subprocess_json([str(b.HERE / "bench_cucim_gpu.py"), str(b.SLIDE), str(w), f"loader:{w}"],
                                                 dict(b.cucim_env(site), ENABLE_CUSLIDE2="1"), "cucim")
                        value = rows[0]["value"]
                        print(f"  ({rows[0]['tool']})", flush=True)
                except Exception as e:  # a crash is a result
                    print(f"{tool} loader {w}: CRASHED {e}", flush=True)
                    value = float("nan")
                got.setdefault((tool, w), []).append(value)
                print(f"{tool} loader {w} workers: {value:.0f} patches/s", flush=True)
    for w in workers:
        t, c = got[("tilewise", w)], got[("cuCIM cuslide2", w)]
        print(f"loader {w} workers: tilewise {statistics.median(t):.0f} ({min(t):.0f}-{max(t):.0f}), "
              f"cuCIM cuslide2 {statistics.median(c):.0f} ({min(c):.0f}-{max(c):.0f}), "
              f"ratio {statistics.median(t) / statistics.median(c):.2f}")


if __name__ == "__main__":
    main()
