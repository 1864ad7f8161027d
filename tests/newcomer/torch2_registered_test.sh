#!/usr/bin/env bash
# Whenever the torch 2.x environment exists, this build folder registers its tests: a folder that
# kept an older configure's interpreter list would have none, and ctest would never say so.
# usage: torch2_registered_test.sh BUILD_DIR PYENV
set -uo pipefail
build=$1 pyenv=$2
source "$(dirname "$0")/torch_env_lib.sh"
if ! version=$(torch2_version "$pyenv"); then
  echo "SKIPPED: no torch 2.x environment at $pyenv (tools/install-deps.sh makes it)"
  exit 77
fi
count=$(torch2_test_count "$build")
echo "torch $version at $pyenv; python.torch2.* tests registered in $build: ${count:-none}"
if [ -z "$count" ] || [ "$count" -eq 0 ]; then
  echo "FAIL: the environment exists but its tests are not registered (cmake -S . -B $build registers them)"
  exit 1
fi
echo "ok"
