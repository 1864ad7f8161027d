#!/usr/bin/env bash
# Installs, from Debian's packages, whatever the build, the tests and the comparisons need and the
# machine lacks. Safe to run again: it installs nothing that is already there.
# Everything at once: the build (cmake, g++, hwloc), the tests (GoogleTest, iproute2 for the
# network-namespace hosts), the PyTorch backend (python3-torch with its C++ headers in
# libtorch-dev, pybind11-dev) and the comparisons (Open MPI, Gloo via torch, iperf3, matplotlib).
set -euo pipefail

want=(cmake g++ make pkg-config libgtest-dev libbenchmark-dev libhwloc-dev hwloc iproute2 procps
      openmpi-bin libopenmpi-dev python3-torch libtorch-dev pybind11-dev python3-numpy python3-matplotlib
      iperf3)

missing=()
for pkg in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#want[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq || echo "install-deps: apt-get update failed; trying the cached package lists"
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
