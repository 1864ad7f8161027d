#!/usr/bin/env bash
# Installs, from Debian's packages, whatever the build, the tests and the comparisons need and the
# machine lacks. Safe to run again: it installs nothing that is already there.
#   tools/install-deps.sh            build + test dependencies
#   tools/install-deps.sh --compare  also Open MPI and PyTorch (Gloo) for benchmarks/compare
set -euo pipefail

want=(cmake g++ make pkg-config libgtest-dev libbenchmark-dev libhwloc-dev hwloc iproute2 procps
      openmpi-bin libopenmpi-dev python3-torch python3-numpy python3-matplotlib iperf3)

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
