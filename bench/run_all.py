"""Runs every CPU benchmark (bench_cpu.py, bench_loader.py, bench_jpeg2000.py, bench_ndpi.py, bench_dicom.py, bench_mirax.py,
bench_formats_iv.py, bench_planes.py, bench_convert.py,
bench_remote.py, bench_dask.py, bench_cohort.py, bench_torch.py, bench_shared_cache.py); arguments are passed to each."""

import runpy
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
args = sys.argv[1:]
for script in ("bench_cpu.py", "bench_loader.py", "bench_jpeg2000.py", "bench_ndpi.py", "bench_dicom.py", "bench_mirax.py",
               "bench_formats_iv.py", "bench_planes.py", "bench_convert.py",
               "bench_remote.py", "bench_dask.py", "bench_cohort.py", "bench_torch.py", "bench_shared_cache.py"):
    sys.argv = [script] + args
    runpy.run_path(str(HERE / script), run_name="__main__")
