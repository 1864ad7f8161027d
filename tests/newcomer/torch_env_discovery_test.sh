#!/usr/bin/env bash
# A build folder configured without the torch 2.x environment, then configured again with it, must
# register the torch 2.x tests (quickstart configures before test.sh makes the environment; an
# interpreter list frozen at the first configure hid 52 tests). Configure only, in a scratch folder.
# usage: torch_env_discovery_test.sh SOURCE_DIR PYENV CMAKE
set -uo pipefail
source_dir=$1 pyenv=$2 cmake=$3
source "$(dirname "$0")/torch_env_lib.sh"
if ! version=$(torch2_version "$pyenv"); then
  echo "SKIPPED: no torch 2.x environment at $pyenv (tools/install-deps.sh makes it)"
  exit 77
fi
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
configure() {  # PYENV_FOR_THIS_RUN
  COLL_PYENV=$1 "$cmake" -S "$source_dir" -B "$scratch/build" -DCOLL_WITH_CUDA=OFF -DCOLL_CCACHE=OFF \
    >"$scratch/configure.log" 2>&1 || { cat "$scratch/configure.log"; echo "FAIL: configure failed"; exit 1; }
}

configure "$scratch/no-environment-yet"
before=$(torch2_test_count "$scratch/build")
if ! grep -q "^python.torch2" "$scratch/build/test_families_not_registered.txt"; then
  cat "$scratch/build/test_families_not_registered.txt"
  echo "FAIL: without the environment, test_families_not_registered.txt does not name python.torch2"
  exit 1
fi
configure "$pyenv"
after=$(torch2_test_count "$scratch/build")
echo "python.torch2.* tests: ${before:-0} before the environment, ${after:-0} after (torch $version)"
if [ "${before:-0}" -ne 0 ] || [ "${after:-0}" -eq 0 ]; then
  echo "FAIL: expected none before and some after"
  exit 1
fi
if grep -q "^python.torch2" "$scratch/build/test_families_not_registered.txt"; then
  echo "FAIL: the family is still reported as not registered"
  exit 1
fi
echo "ok"
