"""tilewise's and cuCIM's (cuslide2) batch loaders to device, alternating in separate processes on the same
slide and locations (bench_gpu.py's), ROUNDS rounds: the loader rows of bench_gpu.py alone, for a quick
side-by-side on the lent GPU machine after scripts/gpu/test.sh's set-up.
    gpu_loader_pair.py [ROUNDS] [WORKERS ...]     (default 2 rounds, workers 4 and 16)
    gpu_loader_pair.py --cpu [ROUNDS] [WORKERS ...] (the loaders into host memory: tilewise's against cuCIM's
                                                   classic cuslide, its CPU path)"""

from __future__ import annotations

import json
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: common, the workloads
import bench_gpu as b  # noqa: E402


def main() -> None:
    args = sys.argv[1:]
    cpu = bool(args) and args[0] == "--cpu"
    args = args[1:] if cpu else args
    rounds = int(args[0]) if args else 2
    workers = [int(w) for w in args[1:]] or [4, 16]
    site = os.environ["TILEWISE_CUCIM_SITE"]
    baseline = "cuCIM classic (CPU)" if cpu else "cuCIM cuslide2"
    got: dict = {}
    for _ in range(rounds):
        for w in workers:
            for tool in ("tilewise", baseline):
                try:
                    if tool == "tilewise":
                        cmd = [str(Path(__file__).resolve().parent / "ab_child.py"), "loader", str(w), "cpu"] if cpu else \
                            [str(b.HERE / "bench_gpu.py"), "--loader", str(w)]
                        r = b.subprocess_json(cmd, dict(os.environ), "tw")
                        value = r["median"]
                        print(f"  ({json.dumps(r)})", flush=True)
                    else:
                        env = b.cucim_env(site)
                        if cpu:
                            env.pop("ENABLE_CUSLIDE2", None)
                        else:
                            env["ENABLE_CUSLIDE2"] = "1"
                        workload = f"cpuloader:{w}" if cpu else f"loader:{w}"
                        rows = b.subprocess_json([str(b.HERE / "bench_cucim_gpu.py"), str(b.SLIDE), str(w), workload],
                                                 env, "cucim")
                        value = rows[0]["value"]
                        print(f"  ({rows[0]['tool']})", flush=True)
                except Exception as e:  # a crash is a result
                    print(f"{tool} loader {w}: CRASHED {e}", flush=True)
                    value = float("nan")
                got.setdefault((tool, w), []).append(value)
                print(f"{tool} loader {w} workers: {value:.0f} patches/s", flush=True)
    for w in workers:
        t, c = got[("tilewise", w)], got[(baseline, w)]
        print(f"loader {w} workers: tilewise {statistics.median(t):.0f} ({min(t):.0f}-{max(t):.0f}), "
              f"{baseline} {statistics.median(c):.0f} ({min(c):.0f}-{max(c):.0f}), "
              f"ratio {statistics.median(t) / statistics.median(c):.2f}")


if __name__ == "__main__":
    main()
