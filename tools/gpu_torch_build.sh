#!/usr/bin/env bash
# Builds the PyTorch backend's extension (torch_collective._C) alone, against an installed
# libcollective and the torch of one interpreter, for a GPU machine that has torch and the CUDA
# toolkit but neither hwloc nor the time to build the library (tools/gpu_check.sh calls it).
#
# usage:
#   tools/gpu_torch_build.sh --prepare [BUILD_DIR] [PREFIX]
#       here, once: installs BUILD_DIR (default build, a CUDA build) into PREFIX (default
#       .gpu/install) and copies into PREFIX/lib the libraries libcollective.so needs that a bare
#       machine lacks (hwloc and what it brings in)
#   tools/gpu_torch_build.sh [PREFIX] [OUT_DIR]
#       there: configures python/ on its own (as `pip install ./python` does) against PREFIX
#       (default .gpu/install) and builds into OUT_DIR (default .gpu/torch-build); the last two
#       lines printed are the PYTHONPATH and LD_LIBRARY_PATH to run with
# environment:
#   PYTHON            the interpreter whose torch to build for (default python3)
#   JOBS              parallel compile jobs (default nproc)
#   COLL_TORCH_CUDA   ON (default: fail unless the extension takes CUDA tensors), AUTO or OFF
set -euo pipefail
case "${1:-}" in
  -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
esac
cd "$(dirname "$0")/.."

if [[ ${1:-} == --prepare ]]; then
  build=${2:-build}
  prefix=${3:-.gpu/install}
  grep -q '^COLL_HAVE_CUDA:INTERNAL=ON\|CMAKE_CUDA_COMPILER:' "$build/CMakeCache.txt" ||
    { echo "gpu_torch_build.sh: $build is not a CUDA build" >&2; exit 1; }
  # What `cmake --install` installs, and nothing else (no tests).
  # Make lists "... name", Ninja "name: phony".
  available=$(cmake --build "$build" --target help | awk '{ t = $1 == "..." ? $2 : $1; sub(/:$/, "", t); print t }')
  targets=()
  for t in collective collective_static collrun colltopo torch_collective all_reduce_perf all_gather_perf broadcast_perf \
           reduce_perf reduce_scatter_perf gather_perf scatter_perf alltoall_perf sendrecv_perf; do
    grep -qx "$t" <<<"$available" && targets+=("$t")
  done
  ((${#targets[@]} > 0)) || { echo "gpu_torch_build.sh: $build lists none of the targets to install" >&2; exit 1; }
  cmake --build "$build" --parallel "${JOBS:-2}" --target "${targets[@]}" >/dev/null
  cmake --install "$build" --prefix "$prefix" >/dev/null
  for lib in $(ldd "$build/libcollective.so" | awk '/libhwloc|libudev/ { print $3 }'); do
    cp -L "$lib" "$prefix/lib/"
  done
  echo "gpu_torch_build.sh: installed $build into $prefix ($(du -sh "$prefix" | cut -f1))"
  exit 0
fi

prefix=$(realpath -m "${1:-.gpu/install}")
out=$(realpath -m "${2:-.gpu/torch-build}")
python=${PYTHON:-python3}
[[ -f $prefix/lib/cmake/collective/collectiveConfig.cmake ]] ||
  { echo "gpu_torch_build.sh: no installed libcollective in $prefix (make it with --prepare)" >&2; exit 1; }
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
start=$SECONDS
cmake -S python -B "$out" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "-DPython_EXECUTABLE=$(command -v "$python")" \
  "-DCMAKE_PREFIX_PATH=$prefix" "-DCOLL_TORCH_CUDA=${COLL_TORCH_CUDA:-ON}" >"$out.configure.log" 2>&1 ||
  { tail -20 "$out.configure.log" >&2; exit 1; }
grep 'PyTorch backend' "$out.configure.log" || true
cmake --build "$out" --target torch_collective --parallel "${JOBS:-$(nproc)}" >"$out.build.log" 2>&1 ||
  { tail -30 "$out.build.log" >&2; exit 1; }
package_parent=$out/torch_collective
[[ -f $package_parent/torch_collective/__init__.py ]] ||
  { echo "gpu_torch_build.sh: no package in $package_parent" >&2; exit 1; }
echo "gpu_torch_build.sh: built in $((SECONDS - start)) s (logs $out.configure.log, $out.build.log)"
echo "PYTHONPATH=$package_parent"
echo "LD_LIBRARY_PATH=$prefix/lib"
