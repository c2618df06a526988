#!/usr/bin/env bash
# Before/after on the lent GPU machine: builds the working tree and a second tree (a `git archive` tarball
# carried in .gpu/, made by `git archive -o .gpu/base.tar REV`), then runs each workload of
# bench/diag/ab_child.py in a fresh process per build, alternating builds, ROUNDS times, and prints one table.
#   usage: scripts/gpu/ab.sh [ROUNDS]      (after scripts/gpu/test.sh's environment set-up: sourced below)
#   AB_BASE_TAR=FILE                       the base tarball (default .gpu/base.tar)
#   AB_BASE_DEFINES="-DNAME=VALUE ..."      extra CMake definitions for the base build (e.g. to compare an
#                                           option: archive HEAD as the base and set it here)
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-2}
AB_ONLY_SETUP=1 source scripts/gpu/test.sh  # sets root, site, the library paths; builds the working tree
base_src=/tmp/tw-base-src base_site=/tmp/tw-base-site
rm -rf "$base_src" /tmp/tw-base-build && mkdir -p "$base_src" && tar -C "$base_src" -xf "${AB_BASE_TAR:-.gpu/base.tar}"
rm -rf "$base_site" && mkdir -p "$base_site" && cp -r "$site/nvidia" "$base_site/"
echo "== build base"
(cd "$base_src" && CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) python3 -m pip install -q --no-build-isolation --no-deps \
  --target "$base_site" --config-settings=build-dir=/tmp/tw-base-build \
  --config-settings=cmake.define.TILEWISE_NVIMGCODEC_INCLUDE_DIR="$site/nvidia/nvimgcodec/include" \
  --config-settings=cmake.define.TILEWISE_BUILD_CLI=OFF \
  --config-settings=cmake.define.CMAKE_CUDA_ARCHITECTURES="90-real;90-virtual" \
  $(for d in ${AB_BASE_DEFINES:-}; do d=${d#-D}; printf -- '--config-settings=cmake.define.%s ' "$d"; done) \
  . 2>&1 | tail -5)
cores=$(nproc)
python3 - "$rounds" "$cores" "$site" "$base_site" <<'PY'
import json, os, statistics, subprocess, sys
rounds, cores, new_site, base_site = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
work = [tuple(w.split()) for w in os.environ.get("AB_WORK", "loader 4 cuda;loader 16 cuda;loader 16 cpu;"
         "random 16 cuda;random 16 cpu;region cuda;region cpu;tiny cpu").split(";")]
results = {}
for r in range(rounds):
    for w in work:
        for name, site in (("base", base_site), ("new", new_site)):
            env = dict(os.environ, PYTHONPATH=os.pathsep.join([site] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != new_site]))
            p = subprocess.run([sys.executable, "bench/diag/ab_child.py", *w], env=env, capture_output=True, text=True, timeout=300)
            line = [l for l in p.stdout.splitlines() if l.startswith("{")]
            results.setdefault((w, name), []).append(json.loads(line[-1])["median"] if line else float("nan"))
            if not line:
                print("failed:", w, name, p.stderr[-300:])
print("| workload | base (median of rounds; each a median of 5) | new | new / base | all runs base / new |")
print("|---|---:|---:|---:|---|")
for w in work:
    b, n = results[(w, "base")], results[(w, "new")]
    mb, mn = statistics.median(b), statistics.median(n)
    print(f"| {' '.join(w)} | {mb:.0f} | {mn:.0f} | {mn / mb:.2f} | {', '.join(f'{x:.0f}' for x in b)} / {', '.join(f'{x:.0f}' for x in n)} |")
PY
