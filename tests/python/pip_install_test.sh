#!/usr/bin/env bash
# `pip install ./python` into a fresh virtual environment, then a 2-rank all-reduce under torchrun
# with the package pip installed (not the build tree's).
#
# The environment is new and empty but for one .pth line that lends it PYTHON's torch (so that
# the test does not download torch's several GB again); libcollective comes from this build,
# installed into a temporary prefix that pip's CMake finds through CMAKE_PREFIX_PATH.
#
# usage: pip_install_test.sh BUILD_DIR CMAKE PYTHON SOURCE_DIR
set -euo pipefail

if [[ $# -ne 4 ]]; then
  echo "usage: $0 BUILD_DIR CMAKE PYTHON SOURCE_DIR" >&2
  exit 2
fi
build_dir=$1 cmake=$2 python=$3 source_dir=$4
work=$(mktemp -d "${TMPDIR:-/tmp}/coll-pip-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
unset PYTHONPATH LD_LIBRARY_PATH

"$cmake" --install "$build_dir" --prefix "$work/prefix" >"$work/install.log" 2>&1 || {
  cat "$work/install.log"
  fail "cmake --install"
}

"$python" -m venv "$work/venv"
venv_python=$work/venv/bin/python
torch_site=$("$python" -c 'import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))')
venv_site=$("$venv_python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "$torch_site" >"$venv_site/lent-torch.pth"

echo "pip install $source_dir/python (libcollective from $work/prefix)"
CMAKE_PREFIX_PATH=$work/prefix "$venv_python" -m pip install --disable-pip-version-check -q "$source_dir/python" \
  >"$work/pip.log" 2>&1 || {
  tail -40 "$work/pip.log"
  fail "pip install ./python"
}

cat >"$work/all_reduce.py" <<'PY'
import os
import sys

import torch
import torch.distributed as dist
import torch_collective

expected_prefix = sys.argv[1]
if not torch_collective.__file__.startswith(expected_prefix):
    sys.exit(f"torch_collective came from {torch_collective.__file__}, not the venv {expected_prefix}")
dist.init_process_group("collective")
rank, ranks = dist.get_rank(), dist.get_world_size()
tensor = torch.full((1000,), float(rank + 1))
dist.all_reduce(tensor)
if not torch.equal(tensor, torch.full((1000,), float(ranks * (ranks + 1) // 2))):
    sys.exit(f"rank {rank}: all_reduce gave {tensor[:4]}")
print(f"rank {rank}: all_reduce through the pip-installed torch_collective ok ({torch_collective.__file__})")
dist.destroy_process_group()
PY
cd "$work"
"$venv_python" -m torch.distributed.run --standalone --nproc-per-node 2 all_reduce.py "$work/venv" ||
  fail "the 2-rank all-reduce under torchrun"
echo "pip_install_test: passed"
