#!/usr/bin/env bash
# Installs, from Debian's packages, whatever the build, the tests and the comparisons need and the
# machine lacks. Safe to run again: it installs nothing that is already there.
# Everything at once: the build (cmake, g++, hwloc), the tests (GoogleTest, iproute2 for the
# network-namespace hosts, qemu-user to run the programs on older CPU models), the PyTorch
# backend (python3-torch with its C++ headers in libtorch-dev, pybind11-dev) and the comparisons
# (Open MPI, Gloo via torch, iperf3, matplotlib).
#
# Then the torch 2.x environment, from PyPI: a virtual environment in $COLL_PYENV (default
# /opt/collective-py, outside the repository: torch's wheel with its CUDA libraries is several
# GB) with exactly python/requirements-torch2.txt (torch, DeepSpeed, pytest, scikit-build-core).
# Made once and reused; remade when the requirements file changes. SKIP_PYENV=1 skips it (the
# build then covers Debian's torch 1.13 only).
set -euo pipefail
cd "$(dirname "$0")/.."

want=(python3-venv cmake g++ make pkg-config libgtest-dev libbenchmark-dev libhwloc-dev hwloc iproute2 procps
      qemu-user openmpi-bin libopenmpi-dev python3-torch libtorch-dev pybind11-dev python3-numpy
      python3-matplotlib iperf3)
# OpenSSL's libcrypto: HMAC-SHA256 for the authenticated store and socket connections (loaded at
# run time; no headers needed). clang: libFuzzer and the sanitizer build (tools/sanitize.sh).
want+=(libssl3 clang)
# valgrind: the memcheck tests (tests/memcheck) run the perf programs under it.
want+=(valgrind)
# ccache: every compile goes through it where installed (cmake/compiler_cache.cmake), so that CI's
# clean clones and tools/sanitize.sh's builds reuse what an earlier build on this machine compiled.
want+=(ccache)
# rdma-core's header and libibverbs (libibverbs-dev): the verbs loader and its emulator build against
# the header; without it they are left out (transport/verbs, tests/verbs_emulator).
want+=(libibverbs-dev)

missing=()
for pkg in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#want[@]} packages present"
else
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq || echo "install-deps: apt-get update failed; trying the cached package lists"
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

[ "${SKIP_PYENV:-0}" = 1 ] && { echo "install-deps: SKIP_PYENV=1: no torch 2.x environment"; exit 0; }
pyenv=${COLL_PYENV:-/opt/collective-py}
requirements=python/requirements-torch2.txt
stamp=$pyenv/.collective-requirements
if [ -x "$pyenv/bin/python" ] && cmp -s "$requirements" "$stamp"; then
  echo "install-deps: torch 2.x environment $pyenv is up to date"
  exit 0
fi
echo "install-deps: making the torch 2.x environment $pyenv from $requirements (a few GB, once)"
[ -x "$pyenv/bin/python" ] || $SUDO /usr/bin/python3 -m venv "$pyenv"
$SUDO "$pyenv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
$SUDO cp "$requirements" "$stamp"
echo "install-deps: torch 2.x environment ready: $("$pyenv/bin/python" -c 'import torch; print(torch.__version__)' 2>/dev/null)"
