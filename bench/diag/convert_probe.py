"""One small conversion on the GPU in one of several orders, to tell where the GPU convert path fails:

    plain       convert(device="cuda") as a user calls it (level 0's bands read on a second thread while the
                converting thread encodes)
    serial      the same with skip_damaged=True, whose bands are read on the converting thread
    read-first  a region read to the device first (nvImageCodec's decoders made before the encoders), then
                as plain

Prints "converted MODE" on success; run each mode in its own process (scripts/gpu/measure.sh convertlog).

    usage: convert_probe.py MODE SLIDE OUTPUT
"""
import sys

import tilewise


def main() -> int:
    mode, slide, output = sys.argv[1:4]
    if mode not in ("plain", "serial", "read-first"):
        raise SystemExit(f"unknown mode {mode!r}")
    if mode == "read-first":
        with tilewise.open(slide) as s:
            region = s.read_region((0, 0), (512, 512), device="cuda")
            print(f"read {tuple(region.shape)} to the device", flush=True)
    tilewise.convert(slide, output, device="cuda", skip_damaged=mode == "serial")
    print(f"converted {mode}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
