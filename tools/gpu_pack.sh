#!/usr/bin/env bash
# Packs what tools/gpu_check.sh runs from a CUDA build made here into one archive, so that a GPU
# machine with no hwloc, no GoogleTest and little time runs it without building:
#   tools/gpu_pack.sh [BUILD_DIR] [ARCHIVE]      (defaults: build, .gpu/bundle.tar.xz)
#   then there: GPU_CHECK_PREBUILT=.gpu/bundle.tar.xz tools/gpu_check.sh --quick LOG_DIR
# The archive holds the GPU test programs, all_reduce_perf, collrun, libcollective.so and the
# shared libraries the GPU machine's image lacks (hwloc and what it needs), in the build's layout.
set -euo pipefail
case "${1:-}" in
  -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
esac
cd "$(dirname "$0")/.."
build=${1:-build}
archive=${2:-.gpu/bundle.tar.xz}
programs=(tests/cuda/gpu_api tests/cuda/gpu_faults tests/cuda/gpu_progress tests/cuda/gpu_collectives tests/cuda/gpu_bench
          tests/cuda/gpu_staged tests/cuda/gpu_vcollectives tests/cuda/gpu_zero_step tests/cuda/gpu_zero_comm
          tests/cuda_host/test_cuda_host benchmarks/perf/all_reduce_perf tools/collrun/collrun)
# Packed where the build has them: the staging path's host tests, and the verbs emulator (its row
# runs the staged cases over it).
optional=(tests/staged/test_staged tests/verbs_emulator/libcoll_verbs_emulator.so)
grep -q '^COLL_HAVE_CUDA:INTERNAL=ON\|CMAKE_CUDA_COMPILER:' "$build/CMakeCache.txt" ||
  { echo "gpu_pack.sh: $build is not a CUDA build" >&2; exit 1; }
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
for p in "${programs[@]}"; do
  [[ -x $build/$p ]] || { echo "gpu_pack.sh: $build/$p is missing (build it first)" >&2; exit 1; }
  mkdir -p "$stage/$(dirname "$p")"
  cp "$build/$p" "$stage/$p"
done
for p in "${optional[@]}"; do
  [[ -f $build/$p ]] || continue
  mkdir -p "$stage/$(dirname "$p")"
  cp "$build/$p" "$stage/$p"
done
mkdir -p "$stage/lib"
cp -L "$build"/libcollective.so.0 "$stage/lib/"
# The libraries hwloc brings in (libhwloc, libudev); glibc and libstdc++ are the machine's own.
for lib in $(ldd "$build/tests/cuda/gpu_api" | awk '/libhwloc|libudev/ { print $3 }'); do
  cp -L "$lib" "$stage/lib/"
done
mkdir -p "$(dirname "$archive")"
tar -C "$stage" -cJf "$archive" .
echo "gpu_pack.sh: $archive ($(du -h "$archive" | cut -f1)) from $build"
