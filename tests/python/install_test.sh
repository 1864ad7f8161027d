#!/usr/bin/env bash
# Installs the build into a temporary prefix and runs an example from it: the package must lie
# in P/LIBDIR/python/torch_collective and its extension must find the installed libcollective
# (through its RPATH), not the build tree's.
#
# usage: install_test.sh BUILD_DIR LIBDIR BINDIR CMAKE PYTHON EXAMPLES_DIR
set -euo pipefail

if [[ $# -ne 6 ]]; then
  echo "usage: $0 BUILD_DIR LIBDIR BINDIR CMAKE PYTHON EXAMPLES_DIR" >&2
  exit 2
fi
build_dir=$1 libdir=$2 bindir=$3 cmake=$4 python=$5 examples=$6

work=$(mktemp -d "${TMPDIR:-/tmp}/coll-python-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
unset LD_LIBRARY_PATH PYTHONPATH

"$cmake" --install "$build_dir" --prefix "$prefix" >"$work/install.log" 2>&1 || {
  cat "$work/install.log"
  fail "cmake --install"
}
package=$prefix/$libdir/python/torch_collective
[[ -f $package/__init__.py ]] || fail "missing $package/__init__.py"
compgen -G "$package/_C*.so" >/dev/null || fail "missing the extension $package/_C*.so"

# Which libcollective the extension loaded, from the process's own mappings.
cat >"$work/which_library.py" <<'PY'
import torch_collective  # noqa: F401
with open("/proc/self/maps") as maps:
    print(sorted({line.split()[-1] for line in maps if "libcollective.so" in line}))
PY
loaded=$(PYTHONPATH=$prefix/$libdir/python "$python" "$work/which_library.py" 2>/dev/null)
real_libdir=$(cd "$prefix/$libdir" && pwd -P)
[[ $loaded == "['$real_libdir/libcollective.so"* ]] || fail "the extension loaded $loaded, expected $real_libdir/libcollective.so"

PYTHONPATH=$prefix/$libdir/python "$prefix/$bindir/collrun" -n 2 "$python" "$examples/point_to_point.py" ||
  fail "examples/point_to_point.py on the installed package"
[[ -f $prefix/include/collective_zero.h ]] || fail "missing $prefix/include/collective_zero.h"
PYTHONPATH=$prefix/$libdir/python "$prefix/$bindir/collrun" -n 2 "$python" "$examples/zero_cifar.py" --stage 3 --epochs 1 \
  || fail "examples/zero_cifar.py (torch_collective.zero) on the installed package"
echo "python install test: 2 passed, 0 failed"
