#!/usr/bin/env bash
# From a fresh checkout to a first measurement: installs the dependencies, builds everything in
# Release mode, and runs a 4-rank all-reduce sweep with result checking.
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: tools/quickstart.sh [-h|--help]

  1. tools/install-deps.sh (Debian packages; uses sudo when not root); not the torch 2.x
     environment (several GB from PyPI, which the benchmark does not need) unless SKIP_PYENV=0
  2. cmake -S . -B build -DCMAKE_BUILD_TYPE=Release, then builds with $(nproc) jobs
  3. collrun -n 4 all_reduce_perf -b 8 -e 64M -f 4 -c 1

environment:
  BUILD_DIR   build directory (default: build)
  JOBS        parallel build jobs (default: nproc)
  SKIP_DEPS=1 do not run tools/install-deps.sh
USAGE
}

case "${1:-}" in
  -h|--help) usage; exit 0 ;;
  "") ;;
  *) echo "quickstart.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
esac

cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-$(nproc)}

if [ "${SKIP_DEPS:-0}" != 1 ]; then
  SKIP_PYENV=${SKIP_PYENV:-1} tools/install-deps.sh
fi
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release
cmake --build "$BUILD_DIR" --parallel "$JOBS"

collrun="$BUILD_DIR/tools/collrun/collrun"
perf="$BUILD_DIR/benchmarks/perf/all_reduce_perf"
echo
echo "+ $collrun -n 4 $perf -b 8 -e 64M -f 4 -c 1"
"$collrun" -n 4 "$perf" -b 8 -e 64M -f 4 -c 1

cat <<NEXT

Next:
  - the other collectives: $BUILD_DIR/benchmarks/perf/*_perf (same flags; -h for help), e.g.
      $collrun -n 4 $BUILD_DIR/benchmarks/perf/reduce_scatter_perf -b 1K -e 16M -f 4 -d all -o all
  - against Open MPI and Gloo on this host (all-reduce, about a minute; leave out --colls for
    all nine collectives, several minutes):
      benchmarks/compare/compare.py --build-dir $BUILD_DIR --ranks 2,4 --colls all_reduce
  - the tests: tools/test.sh
  - benchmarks/README.md and tools/README.md say more.
NEXT
