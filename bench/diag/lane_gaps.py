"""Where the decode lanes stand idle during a loader's passes: joins the lanes' call trace (TILEWISE_GPU_TRACE,
gpu/tile_lanes.h) with each pass's start and end (bench_gpu.py --loader with AB_READS_LOG) and prints, per
pass and as medians over the passes, how busy the lanes were:

- busy: lane-seconds inside calls / (lanes x the pass's wall time);
- start: from the pass's start to the first call; drain: from the moment fewer than all lanes are busy for
  the last time to the last call's return, and tail: from that return to the pass's end;
- middle: the lanes' busy share between the first call's start and the drain;
- idle gaps in the middle: how often and how long no lane at all was in a call.

    TILEWISE_GPU_TRACE=/tmp/calls.csv AB_READS_LOG=/tmp/passes.csv python3 bench_gpu.py --loader 16
    python3 lane_gaps.py /tmp/calls.csv /tmp/passes.csv"""

from __future__ import annotations

import statistics
import sys


def load(path: str) -> list[list[int]]:
    with open(path) as f:
        return [[int(v) for v in line.split(",")] for line in f if line.strip()]


def busy_profile(calls: list[list[int]], start: int, end: int) -> list[tuple[int, int]]:
    """(time, lanes in a call from then on) steps inside [start, end), calls clipped to it."""
    events = []
    for _, claimed, returned, *_ in calls:
        a, b = max(claimed, start), min(returned, end)
        if a < b:
            events += [(a, 1), (b, -1)]
    events.sort()
    steps, level = [(start, 0)], 0
    for t, d in events:
        level += d
        steps.append((t, level))
    return steps


def analyse(calls: list[list[int]], start: int, end: int, lanes: int) -> dict | None:
    inside = [c for c in calls if c[2] > start and c[1] < end]
    if not inside:
        return None
    first = min(c[1] for c in inside)
    last = max(c[2] for c in inside)
    steps = busy_profile(inside, start, end)
    # The drain begins where the lanes last dropped below all busy before the last call returned.
    drain_from = first
    for (t, level), (t_next, _) in zip(steps, steps[1:] + [(end, 0)]):
        if t_next <= last and level >= lanes:
            drain_from = t_next
    busy_ns = sum(min(c[2], end) - max(c[1], start) for c in inside)
    middle_busy, gaps = 0, []
    for (t, level), (t_next, _) in zip(steps, steps[1:] + [(end, 0)]):
        a, b = max(t, first), min(t_next, drain_from)
        if a >= b:
            continue
        middle_busy += level * (b - a)
        if level == 0:
            gaps.append(b - a)
    middle = max(1, drain_from - first)
    wall = end - start
    return {"wall_ms": wall / 1e6, "busy": busy_ns / (lanes * wall), "start_ms": (first - start) / 1e6,
            "drain_ms": (last - drain_from) / 1e6, "tail_ms": (end - last) / 1e6,
            "middle_busy": middle_busy / (lanes * middle), "idle_gaps": len(gaps),
            "idle_ms": sum(gaps) / 1e6, "calls": len(inside),
            "tiles_per_call": statistics.mean(c[3] for c in inside)}


def main() -> None:
    calls = load(sys.argv[1])  # lane, claimed_ns, returned_ns, tiles, per_call
    passes = load(sys.argv[2])  # start_ns, end_ns
    lanes = len({c[0] for c in calls})
    rows = [r for r in (analyse(calls, s, e, lanes) for s, e in passes) if r]
    for r in rows:
        print(" ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in r.items()))
    if rows:
        med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
        print(f"medians over {len(rows)} passes, {lanes} lanes: " +
              " ".join(f"{k} {v:.3f}" for k, v in med.items()))


if __name__ == "__main__":
    main()
