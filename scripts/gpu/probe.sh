#!/usr/bin/env bash
# Runs a Python script once per configuration (a line of VAR=VALUE settings each, from stdin) with the
# working tree built as scripts/gpu/test.sh builds it, printing the script's last line per configuration
# (bench/diag/ab_child.py: one JSON line of rates and lane statistics): for sweeping the GPU path's settings on
# the lent machine.
#   usage: scripts/gpu/probe.sh bench/diag/ab_child.py loader 16 cuda <<< $'X=1\nTILEWISE_GPU_CPU_ASSIST=0'
#          scripts/gpu/probe.sh bench/diag/gpu_diag.py <<< 'X=1'     (the whole output: PROBE_TAIL=100)
set -uo pipefail
cd "$(dirname "$0")/../.."
AB_ONLY_SETUP=1 source scripts/gpu/test.sh > "${OUT:-/tmp}/probe-setup.log" 2>&1 || { tail -20 "${OUT:-/tmp}/probe-setup.log"; exit 1; }
set +e
while read -r config; do
  [ -z "$config" ] && continue
  # shellcheck disable=SC2086
  echo "$config : $(env $config python3 "$@" 2>&1 | tail -"${PROBE_TAIL:-1}")"
done
