#!/usr/bin/env bash
# Installs the Debian 12 packages gsz builds and tests with (skips what is there).
set -euo pipefail
pkgs=(build-essential cmake pkg-config python3 libzstd-dev libxxhash-dev libcli11-dev nlohmann-json3-dev
      libgtest-dev libomp-dev clang libclang-rt-14-dev libhdf5-dev hdf5-tools python3-dev pybind11-dev python3-numpy)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
    echo "gsz: installing ${missing[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
