#!/usr/bin/env bash
# openslide-python's own test suite against tilewise.openslide: the sdist of the openslide-python version
# installed as the oracle (its tests/ and fixtures) is downloaded once into build/compat/ and run with
# tests/compat/forward first on the path, so `import openslide` is tilewise's module. Tests that need a
# format still to come are skipped by name with the reason (tests/compat/known_gaps.py).
set -euo pipefail
cd "$(dirname "$0")/../.."
py=.venv/bin/python
version=$($py -c "import importlib.metadata as m; print(m.version('openslide-python'))")
dir=build/compat/openslide_python-$version
if [ ! -d "$dir/tests" ]; then
  mkdir -p build/compat
  $py -m pip download -q --no-deps --no-binary :all: -d build/compat "openslide-python==$version"
  tar -C build/compat -xzf "build/compat/openslide_python-$version.tar.gz"
fi
echo "openslide-python $version's test suite against tilewise.openslide"
cd "$dir/tests"
PYTHONPATH="$OLDPWD/tests/compat/forward:$OLDPWD/tests/compat" "$OLDPWD/$py" -m pytest -q -rs -p no:cacheprovider \
  -p known_gaps .
