#!/usr/bin/env bash
# Installs the built wheel with plain pip into a clean Debian 12 system - a debootstrap chroot (minbase plus
# python3) that has none of tilewise's -dev packages nor their libraries - and runs the Python test suite there
# against the installed wheel, not the source tree.
#
#   scripts/test-wheel.sh [WHEEL]     (default: the newest dist/tilewise-*manylinux*.whl; needs root)
#
# The pristine chroot is made once and kept as build/deb12-base.tar; each run unpacks a fresh copy. pip's
# download cache (build/wheel-pip-cache) is shared between runs; nothing else of the host enters the chroot.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
wheel=$(realpath "${1:-$(ls -t dist/tilewise-*manylinux*.whl | head -1)}")
base=build/deb12-base.tar root=$repo/build/deb12-root cache=$repo/build/wheel-pip-cache
# Exit status 77: this machine cannot host the chroot (not root, or mounts not permitted); the caller reports it.
[ "$(id -u)" -eq 0 ] || { echo "test-wheel: needs root (debootstrap, chroot, mount)"; exit 77; }
if [ ! -f "$base" ]; then
  command -v debootstrap >/dev/null || { apt-get update -qq; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null; }
  rm -rf build/deb12-make && mkdir -p build
  echo "test-wheel: debootstrap bookworm (minbase + python3)"
  debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates bookworm build/deb12-make \
    http://deb.debian.org/debian >build/debootstrap.log 2>&1 || { tail -20 build/debootstrap.log; exit 1; }
  tar -C build/deb12-make -cf "$base" . && rm -rf build/deb12-make
fi

cleanup() {
  for m in shared/testdata dev/shm dev/pts dev proc root/.cache/pip; do mountpoint -q "$root/$m" 2>/dev/null && umount -l "$root/$m"; done
  # Never delete through a mount that is still there (the chroot's /dev is the host's).
  if grep -q " $root/" /proc/mounts; then echo "test-wheel: $root still has mounts; not removing it"; return 1; fi
  rm -rf --one-file-system "$root"
}
trap cleanup EXIT
cleanup
mkdir -p "$root" "$cache" && tar -C "$root" -xf "$base"
mkdir -p "$root/root/.cache/pip" "$root/src" "$root/dist"
mount -t proc proc "$root/proc" || { echo "test-wheel: this machine does not permit mounts"; exit 77; }
mount --rbind /dev "$root/dev"
mount --bind "$cache" "$root/root/.cache/pip"
if [ -d ../shared/testdata ]; then  # real files the suite uses where present (conftest: REPO/../shared/testdata)
  mkdir -p "$root/shared/testdata" && mount --bind -o ro ../shared/testdata "$root/shared/testdata"
fi
cp /etc/resolv.conf "$root/etc/resolv.conf"
# The host's CA bundle, for networks whose HTTPS goes through a proxy with its own CA (PyPI is reached from the
# chroot); the chroot's own libraries stay Debian's.
cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
cp "$wheel" "$root/dist/"
# Packages installed in the chroot must not start their services (nginx would listen on the host's network).
printf '#!/bin/sh\nexit 101\n' > "$root/usr/sbin/policy-rc.d" && chmod +x "$root/usr/sbin/policy-rc.d"
# The tests, their generators and fixtures; not the package's sources (the chroot has no compiler either).
cp -r tests pyproject.toml requirements-dev.txt requirements-oracles.txt "$root/src/"
rm -rf "$root/src/tests/cpp" "$root/src/tests/package"
find "$root/src/tests/fuzz" -maxdepth 1 -type f -delete  # the fuzz targets' sources; their regression inputs stay

echo "test-wheel: $(basename "$wheel") into Debian $(cat "$root/etc/debian_version") ($(chroot "$root" python3 -V))"
chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/bin:/bin LANG=C.UTF-8 /bin/bash -euo pipefail -c '
  cd /src
  for lib in libjpeg libopenjp2 libdeflate libpugixml libpng16 libcurl; do  # (Python itself brings libcrypto, zstd)
    if ls /usr/lib/x86_64-linux-gnu/$lib.so* >/dev/null 2>&1; then echo "unexpected: $lib is installed"; exit 1; fi
  done
  python3 -m venv /venv
  /venv/bin/pip install -q --upgrade pip >/dev/null
  /venv/bin/pip install -q /dist/*.whl
  /venv/bin/python -c "import tilewise, sys; print(\"installed:\", tilewise.__file__)"
  # Every native library of the extension, the JPEG XR helper and the CLI resolves inside the wheel, or to glibc / libstdc++ / zlib.
  for elf in /venv/lib/python3*/site-packages/tilewise/_core*.so /venv/lib/python3*/site-packages/tilewise/tilewise-jpegxr-worker \
             /venv/lib/python3*/site-packages/tilewise.scripts/tilewise; do
    outside=$(ldd "$elf" | grep "=>" | grep -v -E "tilewise.libs|lib(c|m|stdc\+\+|gcc_s|z|pthread|dl|rt|resolv)\.so" || true)
    [ -z "$outside" ] || { echo "$elf links outside the wheel: $outside"; exit 1; }
  done
  /venv/bin/tilewise --help >/dev/null
  # The GPU extra resolves from PyPI for this platform (not installed: no GPU here; tests/gpu runs on the H200).
  /venv/bin/pip install -q --dry-run --report /tmp/cuda13.json "$(ls /dist/*.whl)[cuda13]"
  /venv/bin/python -c "import json; print(\"cuda13 extra:\", sorted(i[\"metadata\"][\"name\"] for i in json.load(open(\"/tmp/cuda13.json\"))[\"install\"]))"
  echo "test-wheel: installed and linked on the clean system; adding the test suite'"'"'s tools (libvips-tools, nginx-light, dicom3tools, orthanc)"
  # The slide generators of the tests call `vips`, the remote tests serve slides with nginx, the writer tests
  # validate DICOM with dicom3tools'"'"' dciodvfy and store it on Orthanc; installed only now,
  # after the checks above, so that the libraries they bring (libjpeg, libpng, ...) cannot have satisfied the wheel.
  # The STOW-RS tests start their own Orthanc: the package'"'"'s service is not started in the chroot.
  printf "#!/bin/sh\nexit 101\n" > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libvips-tools \
    nginx-light dicom3tools orthanc orthanc-dicomweb orthanc-wsi >/dev/null
  grep -v -E "^(scikit-build-core|nanobind)" requirements-dev.txt > /tmp/test-requirements.txt
  /venv/bin/pip install -q -r /tmp/test-requirements.txt
  /venv/bin/pip install -q --no-deps -r requirements-oracles.txt
  /venv/bin/python -m pytest -q -rs -p no:cacheprovider tests/python
'
