#!/usr/bin/env bash
# From a fresh checkout to a first measurement: installs what the build needs, builds the library,
# collrun and the perf programs in Release mode (not the tests: tools/test.sh builds those), and
# runs a 4-rank all-reduce sweep with result checking.
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: tools/quickstart.sh [-h|--help]

  1. tools/install-deps.sh --build-only (the Debian packages the build needs; sudo when not
     root). tools/test.sh installs the rest (the tests' packages, the torch 2.x environment)
  2. cmake -S . -B build -DCMAKE_BUILD_TYPE=Release, then builds the library, collrun and the
     nine *_perf programs with $(nproc) jobs (tools/test.sh builds the rest in the same folder);
     without a GPU (no nvidia-smi, no /dev/nvidia0) the CUDA kernels are left out
  3. collrun -n 4 all_reduce_perf -b 8 -e 64M -f 4 -c 1

environment:
  BUILD_DIR   build directory (default: build)
  JOBS        parallel build jobs (default: nproc)
  SKIP_DEPS=1 do not run tools/install-deps.sh
  COLL_WITH_CUDA  AUTO, ON or OFF: overrides the choice above
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
  tools/install-deps.sh --build-only
fi
# Without a GPU the benchmark runs on host memory, and the CUDA kernels (about half of the build's
# compile time) would wait unused: they are left out here and tools/test.sh builds them.
cuda=AUTO
if ! nvidia-smi -L >/dev/null 2>&1 && ! [ -e /dev/nvidia0 ]; then
  cuda=OFF
  echo "quickstart: no GPU on this machine: building without the CUDA kernels (tools/test.sh builds them)"
fi
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DCOLL_WITH_CUDA="${COLL_WITH_CUDA:-$cuda}"
targets=(collective collrun)
for name in all_reduce all_gather broadcast reduce reduce_scatter gather scatter alltoall sendrecv; do
  targets+=("${name}_perf")
done
cmake --build "$BUILD_DIR" --parallel "$JOBS" --target "${targets[@]}"

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
    all twelve collectives, several minutes):
      benchmarks/compare/compare.py --build-dir $BUILD_DIR --ranks 2,4 --colls all_reduce
  - the tests: tools/test.sh
  - benchmarks/README.md and tools/README.md say more.
NEXT
