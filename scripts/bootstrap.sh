#!/usr/bin/env bash
# Installs everything tilewise needs on a fresh Debian 12 machine, idempotently:
#   Debian packages (apt-get), the project's virtual environment (.venv) and its Python packages (pip).
# Usage: scripts/bootstrap.sh [extra requirements file ...]
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  g++ clang-14 libclang-rt-14-dev cmake ninja-build pkg-config python3 python3-venv python3-dev
  libjpeg62-turbo-dev libturbojpeg0-dev libopenjp2-7-dev libdeflate-dev libzstd-dev libpng-dev
  libpugixml-dev libssl-dev libgtest-dev libcli11-dev nlohmann-json3-dev libvips-tools
)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "bootstrap: installing Debian packages: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "bootstrap: creating .venv"
  "$PYTHON" -m venv .venv
fi

# Re-run pip only when a requirements file changed since the last successful install.
stamp=.venv/.requirements.sha256
reqs=(requirements-dev.txt "$@")
want=$(cat "${reqs[@]}" | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "bootstrap: installing Python packages (${reqs[*]})"
  args=()
  for r in "${reqs[@]}"; do args+=(-r "$r"); done
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  .venv/bin/python -m pip install -q "${args[@]}"
  echo "$want" > "$stamp"
fi
