"""How one read's nvImageCodec calls line up on the lanes: joins the lanes' call trace (TILEWISE_GPU_TRACE,
gpu/tile_lanes.h) with the reads' start and end (ab_child.py's AB_READS_LOG) and prints, per read, its time,
the wait before the first call, the calls (lane, start after the read's start, duration, tiles), and the
time after the last call. A diagnosis of reads that take twice as long as others with the same calls.

    TILEWISE_GPU_TRACE=/tmp/calls.csv AB_READS_LOG=/tmp/reads.csv python3 ab_child.py region cuda
    python3 lane_trace.py /tmp/calls.csv /tmp/reads.csv"""

from __future__ import annotations

import statistics
import sys


def load(path: str) -> list[list[int]]:
    with open(path) as f:
        return [[int(v) for v in line.split(",")] for line in f if line.strip()]


def main() -> None:
    calls = sorted(load(sys.argv[1]), key=lambda c: c[1])  # lane, claimed_ns, returned_ns, tiles, per_call
    reads = load(sys.argv[2])  # start_ns, end_ns
    rows = []
    for start, end in reads:
        inside = [c for c in calls if start <= c[1] < end]
        took = (end - start) / 1e6
        if not inside:
            print(f"read {took:7.2f} ms: no lane call (the CPU path)")
            continue
        first, last = min(c[1] for c in inside), max(c[2] for c in inside)
        longest = max(c[2] - c[1] for c in inside) / 1e6
        rows.append((took, (first - start) / 1e6, longest, (end - last) / 1e6))
        parts = " ".join(f"L{c[0]}@{(c[1] - start) / 1e6:.2f}+{(c[2] - c[1]) / 1e6:.2f}x{c[3]}" for c in inside)
        print(f"read {took:7.2f} ms: first call after {rows[-1][1]:.2f}, longest call {longest:.2f}, "
              f"after the last call {rows[-1][3]:.2f} | {parts}")
    if rows:
        cut = statistics.median(r[0] for r in rows)
        for name, part in (("faster half", [r for r in rows if r[0] <= cut]), ("slower half", [r for r in rows if r[0] > cut])):
            if part:
                med = [statistics.median(r[i] for r in part) for i in range(4)]
                print(f"{name}: read {med[0]:.2f} ms, first call after {med[1]:.2f}, longest call {med[2]:.2f}, "
                      f"after the last call {med[3]:.2f} (medians of {len(part)})")

    # Each lane's calls of the same size, side by side: one lane (one decoder) slower than the others on
    # every call is a property of that decoder, not of the read.
    by_lane: dict = {}
    for c in calls:
        by_lane.setdefault((c[3], c[0]), []).append((c[2] - c[1]) / 1e6)
    for (tiles, lane), took in sorted(by_lane.items()):
        if len(took) >= 3:
            print(f"lane {lane}, calls of {tiles}: {len(took)} calls, median {statistics.median(took):.2f} ms "
                  f"(min {min(took):.2f})")

    # Each lane's first calls (warm-up reads included), in order: whether a process's slow first reads are
    # each decoder's first calls (a per-lane warm-up) or the process's first milliseconds (any lane).
    origin = calls[0][1] if calls else 0
    firsts: dict = {}
    for c in calls:
        firsts.setdefault(c[0], []).append(c)
    for lane, own in sorted(firsts.items()):
        shown = " ".join(f"{(c[2] - c[1]) / 1e6:.1f}ms x{c[3]} @{(c[1] - origin) / 1e6:.0f}" for c in own[:6])
        print(f"first calls of lane {lane}: {shown}")


if __name__ == "__main__":
    main()
