"""Times reads of every channel of VSIs (scripts/gpu/prepare.sh) into device memory, with the scheduler's race
(TILEWISE_GPU_POLICY as set), against the host read: medians of the later 20 of 40 reads; prints gpu_stats'
counts per file."""
import sys
import time

import numpy as np

import tilewise

tilewise._gpu.configure()
folder = sys.argv[1]
for name in sys.argv[2:]:
    s = tilewise.open(f"{folder}/{name}")
    w, h = s.dimensions

    def run(device, n=40):
        import cupy

        times = []
        for i in range(n):
            t = time.perf_counter()
            s.read_region((0, 0), (w, h), c=None, z=i % s.shape(0)[2], device=device)
            cupy.cuda.runtime.deviceSynchronize()
            times.append(time.perf_counter() - t)
        return np.median(times[n // 2:]) * 1e3  # the later half: after the race has measured both sides

    tilewise.set_cache_capacity(0)
    g0 = tilewise._core.gpu_stats(0)
    on_device = run("cuda")
    g1 = tilewise._core.gpu_stats(0)
    host = run(None)
    print(f"{name}: all channels {w}x{h} to device {on_device:.2f} ms (gpu_tiles +{g1['gpu_tiles'] - g0['gpu_tiles']}, "
          f"host_plane_regions +{g1['host_plane_regions'] - g0['host_plane_regions']}); host read {host:.2f} ms")
