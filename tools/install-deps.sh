#!/usr/bin/env bash
# Installs, from Debian's packages, whatever the build, the tests and the comparisons need and the
# machine lacks, then the torch 2.x environment from PyPI. Safe to run again (it installs nothing
# that is already there) and safe to run twice at once (a lock: the second waits for the first).
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: tools/install-deps.sh [--build-only] [-h|--help]

  (default)     every Debian package the build, the tests and the comparisons need, then the
                torch 2.x environment from PyPI (unless SKIP_PYENV=1)
  --build-only  only what the library, collrun and the perf programs need (what
                tools/quickstart.sh builds): cmake, g++, make, pkg-config, hwloc, ccache, libssl3;
                no torch environment

environment:
  COLL_PYENV    the torch 2.x environment (default /opt/collective-py), outside the repository:
                torch's wheel with its CUDA libraries is several GB. It holds exactly
                python/requirements-torch2.txt (torch, DeepSpeed, pytest, scikit-build-core), is
                made once and remade when that file changes
  SKIP_PYENV=1  no torch 2.x environment (the build then covers Debian's torch 1.13 only, and
                tools/test.sh's summary says the torch 2.x tests did not run)
  COLL_INSTALL_LOCK  the lock file (default /tmp/collective-install-deps.lock)
USAGE
}

profile=all
case "${1:-}" in
  -h|--help) usage; exit 0 ;;
  --build-only) profile=build ;;
  "") ;;
  *) echo "install-deps.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."

# One install at a time: two runs side by side (a build and a test run started together) would
# otherwise race in apt and pip-install into the same environment at once.
lock=${COLL_INSTALL_LOCK:-/tmp/collective-install-deps.lock}
exec 9>>"$lock"
if ! flock -n 9; then
  echo "install-deps: another tools/install-deps.sh holds $lock; waiting for it to finish"
  flock 9
fi

# The build: cmake, g++, hwloc (topology; optional, sysfs without it), OpenSSL's libcrypto (HMAC
# for the authenticated store and sockets, loaded at run time; no headers needed), ccache (every
# compile goes through it where installed: cmake/compiler_cache.cmake).
want=(cmake g++ make pkg-config libhwloc-dev hwloc libssl3 ccache)
if [ "$profile" = all ]; then
  # The tests: GoogleTest, iproute2 for the network-namespace hosts, qemu-user to run the programs
  # on older CPU models, valgrind for tests/memcheck, clang for libFuzzer and the sanitizer build
  # (tools/sanitize.sh), rdma-core's header for the verbs loader and its emulator
  # (transport/verbs, tests/verbs_emulator).
  want+=(libgtest-dev libbenchmark-dev iproute2 procps qemu-user valgrind clang libibverbs-dev)
  # The PyTorch backend on Debian's torch 1.13 (python3-torch, its C++ headers in libtorch-dev,
  # pybind11-dev), and the venv module for the torch 2.x environment; nlohmann/json, which torch
  # 2.x's Flight Recorder headers include (python/src/flight_recording.h).
  want+=(python3-venv python3-torch libtorch-dev pybind11-dev python3-numpy nlohmann-json3-dev)
  # The comparisons: Open MPI, Gloo (through torch), iperf3, matplotlib.
  want+=(openmpi-bin libopenmpi-dev python3-matplotlib iperf3)
fi

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

[ "$profile" = build ] && exit 0
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
# The stamp is written last: an install cut short is redone whole on the next run.
$SUDO cp "$requirements" "$stamp"
echo "install-deps: torch 2.x environment ready: $("$pyenv/bin/python" -c 'import torch; print(torch.__version__)' 2>/dev/null)"
