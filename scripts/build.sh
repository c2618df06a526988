#!/usr/bin/env bash
# Builds and installs tilewise into .venv with scikit-build-core (the same path `pip install .` takes), with
# the C++ tests enabled. The build tree (build/py) is kept, so rebuilds are incremental.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
CMAKE_BUILD_PARALLEL_LEVEL=$jobs .venv/bin/python -m pip install -q --no-build-isolation --no-deps \
  --config-settings=build-dir=build/py \
  --config-settings=cmake.define.TILEWISE_BUILD_TESTS=ON \
  --config-settings=cmake.build-type=Release \
  .
