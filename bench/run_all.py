"""Runs every benchmark of this machine (CPU now; GPU benchmarks join when the GPU path lands)."""

import runpy
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.argv = [sys.argv[0]] + sys.argv[1:]
runpy.run_path(str(Path(__file__).resolve().parent / "bench_cpu.py"), run_name="__main__")
