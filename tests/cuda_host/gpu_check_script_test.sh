#!/usr/bin/env bash
# tools/gpu_check.sh on a machine without a GPU (GPU_CHECK_ALLOW_NO_GPU=1, SKIP_BUILD=1 over this
# build): it must run to its table and exit 0, with every row present and every GPU row SKIPPED
# with a reason, so that the script a scarce GPU session runs is known to parse and to reach its
# end. Where a GPU is present this is not what the script would do: skipped (77).
# usage: gpu_check_script_test.sh SOURCE_DIR BUILD_DIR
set -uo pipefail
source_dir=$1 build_dir=$2
if command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  echo "SKIPPED: a GPU is present (nvidia-smi -L); run tools/gpu_check.sh itself"
  exit 77
fi
logs=$(mktemp -d "${TMPDIR:-/tmp}/coll-gpu-check.XXXXXX")
trap 'rm -rf "$logs"' EXIT
out=$(GPU_CHECK_ALLOW_NO_GPU=1 SKIP_BUILD=1 BUILD_DIR=$(realpath "$build_dir") GPU_CHECK_BUDGET_S=120 \
  "$source_dir/tools/gpu_check.sh" "$logs" 2>&1)
rc=$?
echo "$out"
[[ $rc -eq 0 ]] || { echo "FAIL: gpu_check.sh exited $rc without a GPU"; exit 1; }
table=$(grep '^| ' <<<"$out" | tail -n +3)
for check in "host-side device tests" "device path through the API" "rank killed mid-collective" \
             "device wait: no progress for T" "collectives on one GPU" "compute-sanitizer" \
             "device all-reduce measurements" "MPS" "all_reduce_perf -m device n=4" "torch NCCL" \
             "torch 2.x backend on CUDA tensors" "API, direct all-reduce (cma)" "direct all-reduce (cma) cases" \
             "all-reduce threads_n4_ring" "all-reduce threads_n8_ring" "RDMA devices" "staged over sockets" \
             "staged: rank killed mid-collective" "staged: compute-sanitizer memcheck" \
             "two levels: P2P in 2 COLL_HOSTID hosts, staged between" "staged over the verbs emulator" \
             "staged all-reduce measurements" "torch backend on CUDA tensors, staged over sockets"; do
  grep -q "^| $check" <<<"$table" || { echo "FAIL: no row '$check' in the table"; exit 1; }
done
if grep '^| ' <<<"$table" | grep -v '^| host-side device tests \| RDMA devices ' | grep -qv '| SKIPPED |'; then
  echo "FAIL: a GPU row is not SKIPPED on a machine without a GPU:"
  grep '^| ' <<<"$table" | grep -v '| SKIPPED |'
  exit 1
fi
if grep '| SKIPPED |' <<<"$table" | grep -q '| SKIPPED | *|'; then
  echo "FAIL: a row is SKIPPED without a reason"
  exit 1
fi
# GPU_CHECK_STEPS: only the steps named run; each other row says it was left out.
only=$(GPU_CHECK_ALLOW_NO_GPU=1 SKIP_BUILD=1 BUILD_DIR=$(realpath "$build_dir") GPU_CHECK_BUDGET_S=120 \
  GPU_CHECK_STEPS=host "$source_dir/tools/gpu_check.sh" "$logs" 2>&1 | grep '^| ' | tail -n +3)
grep -q '^| host-side device tests | PASS\|^| host-side device tests | SKIPPED | not built' <<<"$only" ||
  { echo "FAIL: GPU_CHECK_STEPS=host did not run the host-side tests:"; echo "$only"; exit 1; }
if grep -v '^| host-side device tests ' <<<"$only" | grep -qv 'not in GPU_CHECK_STEPS (host)'; then
  echo "FAIL: GPU_CHECK_STEPS=host ran a step it does not name:"
  grep -v 'not in GPU_CHECK_STEPS' <<<"$only"
  exit 1
fi
echo "ok: gpu_check.sh reached its table, $(grep -c '| SKIPPED |' <<<"$table") GPU rows skipped with their reasons;" \
  "GPU_CHECK_STEPS=host ran that step alone"
