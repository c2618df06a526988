#!/usr/bin/env bash
# Installs everything tilewise needs on a fresh Debian 12 machine, idempotently:
#   Debian packages (apt-get), the project's virtual environment (.venv) and its Python packages (pip).
# Usage: scripts/bootstrap.sh [extra requirements file ...]
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  g++ clang-14 libclang-rt-14-dev cmake ninja-build pkg-config python3 python3-venv python3-dev
  libjpeg62-turbo-dev libturbojpeg0-dev libopenjp2-7-dev libdeflate-dev libzstd-dev libpng-dev
  libpugixml-dev libssl-dev libcurl4-openssl-dev libcharls-dev libsqlite3-dev libjxr-dev libgtest-dev libcli11-dev nlohmann-json3-dev libvips-tools
  liblcms2-dev nginx-light dicom3tools orthanc-wsi orthanc orthanc-dicomweb
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
want=$(cat "${reqs[@]}" requirements-oracles.txt | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "bootstrap: installing Python packages (${reqs[*]})"
  args=()
  for r in "${reqs[@]}"; do args+=(-r "$r"); done
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  .venv/bin/python -m pip install -q "${args[@]}"
  .venv/bin/python -m pip install -q --no-deps -r requirements-oracles.txt
  echo "$want" > "$stamp"
fi

# The GPU path compiles against nvImageCodec 0.8's header, taken from its wheel into build/ (the library is
# loaded at run time from the user's environment). Without network or CUDA the build falls back to a stub.
header=build/nvimgcodec-0.8/include/nvimgcodec.h
if [ ! -f "$header" ] && command -v nvcc >/dev/null 2>&1; then
  mkdir -p build/nvimgcodec-0.8
  if .venv/bin/python -m pip download -q --no-deps --only-binary=:all: -d build/nvimgcodec-0.8 \
      "nvidia-nvimgcodec-cu13>=0.8,<0.9" >/dev/null 2>&1; then
    .venv/bin/python - <<'PY'
import glob, zipfile, os
wheel = glob.glob("build/nvimgcodec-0.8/nvidia_nvimgcodec*.whl")[0]
os.makedirs("build/nvimgcodec-0.8/include", exist_ok=True)
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if name.startswith("nvidia/nvimgcodec/include/") and not name.endswith("/"):
            target = os.path.join("build/nvimgcodec-0.8/include", os.path.basename(name))
            with open(target, "wb") as f:
                f.write(z.read(name))
os.remove(wheel)
PY
  else
    echo "bootstrap: nvImageCodec 0.8 header not downloaded; building without the GPU path"
  fi
fi
