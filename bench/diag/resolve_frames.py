"""Resolves the native frames that scripts/gpu/abort_trace.c prints ("object(+0xOFFSET) [address]" or
"object(symbol+0xOFFSET) [address]") to functions and source lines with addr2line; other lines are skipped.

    usage: python3 bench/diag/resolve_frames.py < LOG
"""
import re
import subprocess
import sys

FRAME = re.compile(r"^(?P<object>/[^(]+)\((?P<symbol>[^+)]*)\+(?P<offset>0x[0-9a-f]+)\) ?\[(?P<address>0x[0-9a-f]+)\]")


def resolve(obj: str, symbol: str, offset: str) -> str:
    if symbol:  # an exported symbol: its name is the answer (demangled)
        out = subprocess.run(["c++filt", symbol], capture_output=True, text=True)
        return f"{out.stdout.strip() or symbol} +{offset}"
    # A frame's offset is its return address: the call is the instruction before it.
    call = hex(max(int(offset, 16) - 1, 0))
    out = subprocess.run(["addr2line", "-f", "-C", "-i", "-e", obj, call], capture_output=True, text=True)
    lines = [line for line in out.stdout.splitlines() if line.strip()]
    return " <- ".join(lines) if lines else f"? ({out.stderr.strip()})"


def main() -> int:
    inside = False
    for line in sys.stdin:
        if line.startswith("== abort_trace"):
            inside = True
            print(line.rstrip())
            continue
        if line.startswith("== end of abort_trace"):
            inside = False
            continue
        match = FRAME.match(line.strip()) if inside else None
        if match:
            name = match["object"].rsplit("/", 1)[-1]
            print(f"  {name}: {resolve(match['object'], match['symbol'], match['offset'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
