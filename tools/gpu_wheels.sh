#!/usr/bin/env bash
# Wheels of the Python packages that the GPU machine's image lacks for the DeepSpeed rows of
# tools/gpu_check.sh (step `zero-ds`), so that a machine with no internet installs them in seconds:
#   tools/gpu_wheels.sh [DIR]        (default .whl, which git ignores)
#   then name DIR in the device call's `carry`; gpu_check.sh installs DIR/*.whl into a scratch
#   folder (GPU_WHEELS=DIR, default .whl) before those rows.
# DeepSpeed is published as source only: it is built here into a pure-Python wheel (its CUDA and
# CPU ops compile on first use there, with the image's nvcc and ninja). Its dependencies that the
# image lacks are downloaded for the image's Python (3.12, x86-64). Versions are the ones
# python/requirements-torch2.txt pins, which the CPU tests ran.
set -euo pipefail
case "${1:-}" in
  -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
esac
cd "$(dirname "$0")/.."
dir=${1:-.whl}
python=${COLL_PYENV:-/opt/collective-py}/bin/python
[[ -x $python ]] || { echo "gpu_wheels.sh: $python is missing (tools/install-deps.sh makes it)" >&2; exit 1; }
pin() { grep -i "^$1==" python/requirements-torch2.txt | head -1; }
mkdir -p "$dir"
rm -f "$dir"/deepspeed-*.whl "$dir"/pydantic*.whl "$dir"/hjson-*.whl "$dir"/annotated_types-*.whl \
  "$dir"/typing_inspection-*.whl
# The image has the rest of DeepSpeed's needs (msgpack, ninja, numpy, psutil, py-cpuinfo, einops,
# tqdm, nvidia-ml-py: the image's package list names them).
"$python" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d "$dir" \
  "$(pin pydantic_core)" "$(pin pydantic)" "$(pin hjson)" "$(pin annotated-types)" "$(pin typing-inspection)"
# Built against the torch here; DS_BUILD_OPS=0 leaves every op to be compiled where it runs.
DS_BUILD_OPS=0 "$python" -m pip wheel -q --no-deps --no-build-isolation -w "$dir" "$(pin deepspeed)"
ls -l "$dir"
