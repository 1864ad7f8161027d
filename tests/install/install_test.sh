#!/usr/bin/env bash
# Installs the build tree into a temporary prefix and uses it the way a downstream project
# would: checks the installed layout (README.md, "Use it"), builds a C99 program with pkg-config
# and a C++ project with find_package(collective), runs both as one rank, and runs the installed
# collrun with the installed all_reduce_perf on two ranks.
#
# usage: install_test.sh BUILD_DIR LIBDIR BINDIR INCLUDEDIR CMAKE C_COMPILER CXX_COMPILER PERF STATIC
#   LIBDIR/BINDIR/INCLUDEDIR: the configured CMAKE_INSTALL_*DIR (lib, bin, include by default);
#   PERF/STATIC: ON when the *_perf programs / libcollective.a are part of the build.
set -euo pipefail

if [[ $# -ne 9 ]]; then
  echo "usage: $0 BUILD_DIR LIBDIR BINDIR INCLUDEDIR CMAKE C_COMPILER CXX_COMPILER PERF STATIC" >&2
  exit 2
fi
build_dir=$1 libdir=$2 bindir=$3 includedir=$4 cmake=$5 cc=$6 cxx=$7 perf=$8 static=$9

work=$(mktemp -d "${TMPDIR:-/tmp}/coll-install-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

step() { echo "== $*"; }
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# Nothing may come from the build tree or the environment by accident: the programs below must
# find the installed library through pkg-config, the CMake package and their RPATHs alone.
unset LD_LIBRARY_PATH PKG_CONFIG_PATH CMAKE_PREFIX_PATH COLL_ALGO COLL_CHECK COLL_DEBUG

step "cmake --install $build_dir --prefix $prefix"
"$cmake" --install "$build_dir" --prefix "$prefix" >"$work/install.log" 2>&1 || {
  cat "$work/install.log"
  fail "cmake --install"
}

step "layout"
perf_programs=(all_reduce all_gather broadcast reduce reduce_scatter gather scatter alltoall sendrecv)
expect=(
  "$includedir/collective.h"
  "$libdir/libcollective.so"
  "$libdir/pkgconfig/collective.pc"
  "$libdir/cmake/collective/collectiveConfig.cmake"
  "$libdir/cmake/collective/collectiveConfigVersion.cmake"
  "$libdir/cmake/collective/collectiveTargets.cmake"
)
if [[ $static == ON ]]; then expect+=("$libdir/libcollective.a"); fi
executables=("$bindir/collrun" "$bindir/colltopo")
if [[ $perf == ON ]]; then
  for p in "${perf_programs[@]}"; do executables+=("$bindir/${p}_perf"); done
fi
for f in "${expect[@]}"; do
  [[ -e $prefix/$f ]] || fail "missing $f; installed: $(cd "$prefix" && find . ! -type d | sort | tr '\n' ' ')"
done
for f in "${executables[@]}"; do
  [[ -f $prefix/$f && -x $prefix/$f ]] || fail "missing executable $f"
done
real_libdir=$(cd "$prefix/$libdir" && pwd -P)

# Only the C API is exported: no internal coll:: C++ symbol leaks out of the shared library.
if command -v nm >/dev/null; then
  nm -D --defined-only "$prefix/$libdir/libcollective.so" >"$work/symbols"
  awk '$3 == "collAllReduce" { found = 1 } END { exit !found }' "$work/symbols" || fail "collAllReduce is not exported"
  if awk '$3 ~ /^_ZN4coll/ { found = 1 } END { exit !found }' "$work/symbols"; then
    fail "libcollective.so exports internal symbols: $(awk '$3 ~ /^_ZN4coll/ { print $3 }' "$work/symbols" | head -5)"
  fi
fi

# The libcollective a program loads, resolved through its RPATH (LD_LIBRARY_PATH is unset).
loaded_lib_dir() {
  local lib
  lib=$(ldd "$1" | awk '/libcollective/ { print $3; exit }')
  if [[ -n $lib && -e $lib ]]; then (cd "$(dirname "$lib")" && pwd -P); fi
}
expect_installed_lib() {
  local dir
  dir=$(loaded_lib_dir "$1")
  [[ $dir == "$real_libdir" ]] || fail "$(basename "$1") loads libcollective from '${dir:-nowhere}', not $real_libdir"
}

# A port nobody listens on, for the rendezvous store of collCommInitFromEnv.
free_port() {
  if command -v python3 >/dev/null; then
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
  else
    echo $((20000 + RANDOM % 30000))
  fi
}

step "C99 program built with pkg-config"
export PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig
version=$(pkg-config --modversion collective)
cflags=$(pkg-config --cflags collective)
libs=$(pkg-config --libs collective)
pc_libdir=$(pkg-config --variable=libdir collective)
echo "   version $version; cflags: $cflags; libs: $libs"
# The .pc file must point into this prefix, not wherever the build was configured to install.
[[ -d $pc_libdir && $(cd "$pc_libdir" && pwd -P) == "$real_libdir" ]] ||
  fail "collective.pc names libdir '$pc_libdir', not $prefix/$libdir"
# shellcheck disable=SC2086  # the flags are separate words
"$cc" -std=c99 -Wall -Wextra -pedantic -Werror $cflags "$here/consumer/c99_allreduce.c" \
  -o "$work/c99_allreduce" $libs -Wl,-rpath,"$pc_libdir"
unset PKG_CONFIG_PATH
expect_installed_lib "$work/c99_allreduce"
RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=$(free_port) \
  timeout 120 "$work/c99_allreduce"

step "C++ project with find_package(collective)"
"$cmake" -S "$here/consumer" -B "$work/consumer-build" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Release >"$work/consumer-configure.log" 2>&1 || {
  cat "$work/consumer-configure.log"
  fail "configuring the consumer project"
}
"$cmake" --build "$work/consumer-build" -j 2 >"$work/consumer-build.log" 2>&1 || {
  cat "$work/consumer-build.log"
  fail "building the consumer project"
}
found=$(sed -n 's/^collective_DIR:PATH=//p' "$work/consumer-build/CMakeCache.txt")
[[ $(cd "$found" && pwd -P) == "$real_libdir/cmake/collective" ]] || fail "find_package(collective) found $found"
# CMake's build RPATH points at the imported library's directory: no LD_LIBRARY_PATH needed.
expect_installed_lib "$work/consumer-build/consumer_shared"
timeout 120 "$work/consumer-build/consumer_shared"
if [[ $static == ON ]]; then
  [[ -x $work/consumer-build/consumer_static ]] || fail "the package does not export collective::collective_static"
  [[ -z $(loaded_lib_dir "$work/consumer-build/consumer_static") ]] || fail "consumer_static loads libcollective.so"
  timeout 120 "$work/consumer-build/consumer_static"
fi

if [[ $perf == ON ]]; then
  step "installed collrun -n 2 all_reduce_perf"
  # The installed perf programs find the installed library through their RPATH ($ORIGIN/../lib).
  expect_installed_lib "$prefix/$bindir/all_reduce_perf"
  (cd "$prefix" && timeout 180 "$bindir/collrun" -n 2 "$bindir/all_reduce_perf" -b 8 -e 1K -c 1) | tee "$work/perf.log"
  grep -q "Out of bounds values : 0 OK" "$work/perf.log" || fail "all_reduce_perf did not report 0 wrong values"
  # Data rows: the #wrong columns (out of place, in place) are the 9th and 13th fields.
  awk '!/^#/ && NF >= 13 { rows++; if ($9 != 0 || $13 != 0) bad++ } END { exit (rows == 0 || bad > 0) }' \
    "$work/perf.log" || fail "all_reduce_perf printed no result rows, or rows with wrong values"
fi

echo "install test: ok"
