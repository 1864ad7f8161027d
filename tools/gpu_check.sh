#!/usr/bin/env bash
# Every GPU check and measurement of libcollective in one call, on a machine with a GPU: builds
# with CUDA, runs the GPU tests (every collective x type x op on 2, 4 and 8 ranks sharing one
# GPU, as threads and as processes; the device path through the public API; a rank killed
# mid-collective; device memory staged between socket "hosts"), compute-sanitizer, the device
# measurements (the staged all-reduce against the host one over the same sockets; all-reduce of
# 256 MiB on 4 ranks against a device-to-device copy measured in the same run, 8-byte latency),
# all_reduce_perf -m device, and NCCL through PyTorch side by side; then prints one table.
# docs/cuda.md says what each row means; the steps are in tools/gpu_check/, one file per group.
#
# usage: tools/gpu_check.sh [--quick] [LOG_DIR]
#   --quick   2 and 4 ranks only, small cases under the sanitizer, a 64 MiB measurement, the
#             staged cases in three types: a first look inside 6 minutes
#   LOG_DIR   where every log goes, the build's included (default: $BUILD_DIR/gpu_check)
# Every step runs under `timeout`, inside one budget for the whole script (GPU_CHECK_BUDGET_S,
# default 540 s, so that one 10-minute call holds it): a step gets at most its own limit and what
# is left of the budget; a step that no longer fits is SKIPPED, saying so.
# environment:
#   BUILD_DIR   build directory (default: build-gpu)
#   JOBS        parallel build jobs (default: nproc)
#   CUDA_ARCHS  CMAKE_CUDA_ARCHITECTURES (default: 80;90)
#   BENCH_BYTES all-reduce size for the measurements (default: 268435456; --quick: 67108864)
#   COLL_TIMEOUT_MS  every wait of the library and the GPU tests (default here: 60000)
#   GPU_CHECK_ALLOW_NO_GPU=1  on a machine without a GPU: build, run what needs none, mark the
#               rest SKIPPED (to check the script itself); otherwise no GPU is an error
#   SKIP_BUILD=1  use BUILD_DIR as it is
#   GPU_CHECK_PREBUILT=ARCHIVE  unpack an archive made by tools/gpu_pack.sh into BUILD_DIR and run
#               that instead of building (a GPU machine without hwloc or GoogleTest, or short time)
#   GPU_CHECK_STEPS  a comma-separated list of the steps to run, the others SKIPPED (default: all):
#               host api faults progress staged collectives vcollectives zero sanitizer bench mps perf nccl
#               torch zerods zerolargest direct rdma (zerods and zerolargest: not in --quick, each a call
#               of its own)
#               (a short device lease spent on what changed since the last full run)
#   GPU_WHEELS  DeepSpeed's wheels for zerods and zerolargest (default .whl, tools/gpu_wheels.sh)
#   GPU_CHECK_LARGEST_OFFLOAD  offload choices of zerolargest (default "none"; "optimizer both")
#   GPU_TORCH_PREFIX  an installed CUDA build of libcollective for the PyTorch backend's row
#               (default .gpu/install, made here by tools/gpu_torch_build.sh --prepare)
set -uo pipefail

quick=0
LOG_DIR=""
for arg in "$@"; do
  case $arg in
    --quick) quick=1 ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "gpu_check.sh: unknown option $arg (try --help)" >&2; exit 2 ;;
    *) LOG_DIR=$arg ;;
  esac
done
cd "$(dirname "$0")/.." || exit 1
BUILD_DIR=${BUILD_DIR:-build-gpu}
JOBS=${JOBS:-$(nproc)}
CUDA_ARCHS=${CUDA_ARCHS:-80;90}
if [[ $quick == 1 ]]; then
  BENCH_BYTES=${BENCH_BYTES:-67108864}
  RANK_COUNTS=2,4
else
  BENCH_BYTES=${BENCH_BYTES:-268435456}
  RANK_COUNTS=2,4,8
fi
LOG_DIR=${LOG_DIR:-$BUILD_DIR/gpu_check}
mkdir -p "$LOG_DIR" || exit 1
LOG_DIR=$(cd "$LOG_DIR" && pwd)
export COLL_TIMEOUT_MS=${COLL_TIMEOUT_MS:-60000}
BUDGET_END=$((SECONDS + ${GPU_CHECK_BUDGET_S:-540}))
rows=()
failed=0

source tools/gpu_check/rows.sh

have_gpu=0
gpu_name="none"
if command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  have_gpu=1
  gpu_name=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -1)
fi
if [[ $have_gpu == 0 && ${GPU_CHECK_ALLOW_NO_GPU:-0} != 1 ]]; then
  echo "gpu_check.sh: no GPU here (nvidia-smi -L lists none); run it on a GPU machine," >&2
  echo "or set GPU_CHECK_ALLOW_NO_GPU=1 to build and run only what needs no GPU." >&2
  exit 1
fi
echo "gpu_check.sh: GPU: $gpu_name"

source tools/gpu_check/build.sh
source tools/gpu_check/device_api.sh
source tools/gpu_check/staged.sh
source tools/gpu_check/collectives.sh
source tools/gpu_check/sanitizer.sh
source tools/gpu_check/measurements.sh
source tools/gpu_check/torch.sh
source tools/gpu_check/zero_deepspeed.sh
source tools/gpu_check/direct_and_rdma.sh

echo
echo "| check | result | detail |"
echo "| --- | --- | --- |"
for r in "${rows[@]}"; do
  IFS='|' read -r check result detail <<<"$r"
  echo "| $check | $result | $detail |"
done
echo
echo "GPU: $gpu_name; $((SECONDS)) s in all$([[ $quick == 1 ]] && echo ' (--quick)'); logs in $LOG_DIR"
exit $failed
