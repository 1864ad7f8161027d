#!/usr/bin/env bash
# Every GPU check and measurement of libcollective in one call, on a machine with a GPU: builds
# with CUDA, runs the GPU tests (every collective x type x op on 2, 4 and 8 ranks sharing one
# GPU, as threads and as processes; the device path through the public API; a rank killed
# mid-collective; device memory staged between socket "hosts"), compute-sanitizer, the device
# measurements (the staged all-reduce against the host one over the same sockets; all-reduce of
# 256 MiB on 4 ranks against a device-to-device copy measured in the same run, 8-byte latency),
# all_reduce_perf -m device, and NCCL through PyTorch side by side; then prints one table.
# docs/cuda.md says what each row means.
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
#               torch zerods direct rdma
#               (a short device lease spent on what changed since the last full run)
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
cd "$(dirname "$0")/.."
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

# step LIMIT_S LOG CMD...: runs CMD under timeout with at most LIMIT_S seconds and what is left of
# the budget (less 20 s for the summary), stdout and stderr to LOG. Returns CMD's status, 124 when
# it was stopped, 125 when it did not start for lack of time.
step() {
  local limit=$1 log=$2
  shift 2
  local left=$((BUDGET_END - SECONDS - 20))
  ((left < limit)) && limit=$left
  if ((limit < 10)); then
    echo "not started: the script's budget is spent" >"$log"
    return 125
  fi
  timeout --kill-after=10 "$limit" "$@" >"$log" 2>&1
}

# What a failed step's row says: stopped by the timeout, not started, or where to look.
why() {  # status log
  case $1 in
    124|137) echo "timed out; $2" ;;
    125) echo "not started: the budget (GPU_CHECK_BUDGET_S) is spent" ;;
    *) echo "exit $1; $2" ;;
  esac
}

# chosen STEP: whether GPU_CHECK_STEPS names STEP (or is empty: every step runs).
chosen() { [[ -z ${GPU_CHECK_STEPS:-} || ,$GPU_CHECK_STEPS, == *,$1,* ]]; }
not_chosen() { row "$1" SKIPPED "not in GPU_CHECK_STEPS ($GPU_CHECK_STEPS)"; }

row() {  # check, result, detail
  rows+=("$1|$2|$3")
  [[ $2 == FAIL ]] && failed=1
  printf '== %-34s %-8s %s\n' "$1" "$2" "$3"
}

# A row from a program's "RESULT PROGRAM ..." lines: SKIPPED where it exited 77 (its first line
# says why), PASS where it exited 0, else FAIL with why and the lines that are not results.
results_row() {  # check, status, log, program name the RESULT lines begin with
  local check=$1 status=$2 log=$3 program=$4 lines
  if [[ $status == 77 ]]; then
    row "$check" SKIPPED "$(head -1 "$log")"
    return
  fi
  lines=$(grep '^RESULT' "$log" | sed "s/^RESULT $program //" | cut -c1-160 | tr '\n' ';')
  if [[ $status == 0 ]]; then
    row "$check" PASS "$lines"
  else
    row "$check" FAIL "$lines $(why $status "$log")"
    grep -v '^RESULT' "$log" | head -20
  fi
}

perf_row() {  # check, status of the perf program's step, its log: its bus bandwidth or why it failed
  if [[ $2 == 0 ]]; then
    row "$1" PASS "$(grep 'Avg bus bandwidth' "$3")"
  else
    row "$1" FAIL "$(why "$2" "$3"): $(grep -m1 -i 'failed\|error' "$3" | cut -c1-150)"
  fi
}

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

# 1. Build with CUDA (GoogleTest optional: its suites are skipped where it is absent).
mkdir -p "$BUILD_DIR"
if [[ -n ${GPU_CHECK_PREBUILT:-} ]]; then
  if tar -C "$BUILD_DIR" -xJf "$GPU_CHECK_PREBUILT"; then
    export LD_LIBRARY_PATH=$(cd "$BUILD_DIR/lib" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    row "prebuilt programs" PASS "$GPU_CHECK_PREBUILT"
  else
    row "prebuilt programs" FAIL "could not unpack $GPU_CHECK_PREBUILT"
    exit 1
  fi
elif [[ ${SKIP_BUILD:-0} != 1 ]]; then
  start=$SECONDS
  step 120 "$LOG_DIR/configure.log" cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DCOLL_WITH_CUDA=ON \
    -DCOLL_BUILD_TESTS=ON "-DCMAKE_CUDA_ARCHITECTURES=$CUDA_ARCHS"
  status=$?
  [[ $status == 0 ]] && { step 300 "$LOG_DIR/build.log" cmake --build "$BUILD_DIR" --parallel "$JOBS"; status=$?; }
  if [[ $status == 0 ]]; then
    row "build (CUDA, archs $CUDA_ARCHS)" PASS "$((SECONDS - start)) s"
  else
    row "build (CUDA, archs $CUDA_ARCHS)" FAIL "$(why $status "$LOG_DIR/configure.log, build.log")"
    tail -30 "$LOG_DIR/build.log" 2>/dev/null || tail -30 "$LOG_DIR/configure.log"
    exit 1
  fi
fi
bin=$BUILD_DIR/tests/cuda

# 2. Host-side device logic (protocol choice, lowering and unit simulation, functors, refusals).
if ! chosen host; then
  not_chosen "host-side device tests"
elif [[ -x $BUILD_DIR/tests/cuda_host/test_cuda_host ]]; then
  # With the staging path's host tests where they were built (its state machine against a host
  # stand-in for the kernels, staged domains over sockets, faults).
  staged_tests=$BUILD_DIR/tests/staged/test_staged
  step 120 "$LOG_DIR/cuda_host.log" bash -c "\"\$1\" && { [[ ! -x \$2 ]] || \"\$2\"; }" _ \
    "$BUILD_DIR/tests/cuda_host/test_cuda_host" "$staged_tests"
  status=$?
  if [[ $status == 0 ]]; then
    row "host-side device tests" PASS "$(grep -c '^\[       OK' "$LOG_DIR/cuda_host.log") tests"
  else
    row "host-side device tests" FAIL "$(why $status "$LOG_DIR/cuda_host.log")"
  fi
else
  row "host-side device tests" SKIPPED "not built (no GoogleTest)"
fi

# 2b. The device path through the public API (the communicator's lazy setup, its event chain
# across two streams, teardown) and that a host-only init makes no CUDA context: first, since
# everything below the API is worth little if this fails (api_row serves step 9's run too).
api_row() {  # check, log, env assignments for gpu_api...
  local check=$1 log=$2
  shift 2
  step 150 "$log" env "$@" "$bin/gpu_api"
  local status=$?
  if [[ $status == 77 ]]; then
    row "$check" SKIPPED "$(head -1 "$log")"
  elif [[ $status == 0 ]]; then
    row "$check" PASS "$(grep -c '^RESULT.*PASS' "$log") checks"
  else
    row "$check" FAIL "$(why $status "$log"): $(grep -m1 '^FAIL\|FAIL$\|^TIMEOUT' "$log" | cut -c1-150)"
    grep -v '^RESULT.*PASS' "$log" | head -10
  fi
}
if chosen api; then
  api_row "device path through the API" "$LOG_DIR/api.log"
else
  not_chosen "device path through the API"
fi

# 2c. A rank process SIGKILLed mid-collective: the survivors must see an error (a failing call,
# collCommGetAsyncError, a stream error) within COLL_TIMEOUT_MS, no hang. Its own short timeout
# (5 s) so that a missed detection shows as a time, not as the whole budget spent.
status=0
chosen faults && { step 90 "$LOG_DIR/faults.log" env COLL_TIMEOUT_MS=5000 "$bin/gpu_faults"; status=$?; }
if ! chosen faults; then
  not_chosen "rank killed mid-collective"
elif [[ $status == 77 ]]; then
  row "rank killed mid-collective" SKIPPED "$(head -1 "$LOG_DIR/faults.log")"
elif [[ $status == 0 ]]; then
  row "rank killed mid-collective" PASS "$(grep -o 'error [0-9]* ms after the kill' "$LOG_DIR/faults.log" | awk '{print $2}' | sort -n | tail -1) ms at most"
else
  row "rank killed mid-collective" FAIL "$(why $status "$LOG_DIR/faults.log"): $(grep -m1 '^FAIL\|FAIL\|^TIMEOUT' "$LOG_DIR/faults.log" | cut -c1-150)"
  grep -v '^RESULT.*PASS' "$LOG_DIR/faults.log" | head -10
fi

# 2d. What bounds a device wait: "no progress for T". A call about four times longer than T that
# keeps moving must succeed; a call whose peer never joins must end with an error after about T.
if ! chosen progress; then
  not_chosen "device wait: no progress for T"
elif [[ -x $bin/gpu_progress ]]; then
  step 90 "$LOG_DIR/progress.log" "$bin/gpu_progress"
  results_row "device wait: no progress for T" $? "$LOG_DIR/progress.log" gpu_progress
else
  row "device wait: no progress for T" SKIPPED "gpu_progress not built"
fi

sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)
# 2e. Device memory between "hosts" on this one GPU (docs/cuda.md, "Device memory across
# hosts"): with P2P and shared memory left out (COLL_TRANSPORTS=^shm,p2p) every byte of device
# memory is staged through pinned host memory over sockets. Rank processes through the public
# API: every collective x type x op x size on 2, 3 and 4 ranks (--quick: float32, bfloat16,
# int32); a rank killed mid-collective; memcheck on the small cases; two COLL_HOSTID hosts with
# P2P inside each and staging between; the verbs emulator in place of sockets where the build has
# it; then the device all-reduce against the host all-reduce over the same sockets (2 thread
# ranks: concurrent kernels, as one GPU per host), and the device-to-host copy rate.
staged_rows() {  # status log label: one row per "RESULT gpu_staged cases" line
  local status=$1 log=$2 label=$3 line what any=0
  if [[ $status == 77 ]]; then
    row "$label" SKIPPED "$(head -1 "$log")"
    return
  fi
  while read -r line; do
    any=1
    what=${line#RESULT gpu_staged cases }
    row "$label ${what%%:*}" "$(grep -o 'PASS\|FAIL' <<<"$what" | head -1)" "$(sed 's/^[^(]*(//; s/)$//' <<<"$what")"
  done < <(grep '^RESULT gpu_staged cases' "$log")
  [[ $any == 0 ]] && row "$label" FAIL "$(why $status "$log")"
  [[ $status != 0 ]] && grep '^FAIL\|^TIMEOUT' "$log" | head -10
}
staged_bench_rows() {  # log
  local copy
  copy=$(awk '$1 == "RESULT" && $3 == "d2h_copy_bytes_per_s" { print $4 }' "$1")
  row "staged: cudaMemcpy D2H ($BENCH_BYTES B)" "$([[ -n $copy ]] && echo INFO || echo FAIL)" \
    "$(awk -v c="$copy" 'BEGIN { if (c != "") printf "%.1f GB/s", c / 1e9 }')"
  while read -r _ _ _ bytes _ dev _ host; do
    row "staged all-reduce $bytes B, 2 socket hosts" INFO "$(awk -v b="$bytes" -v d="$dev" -v h="$host" 'BEGIN {
      printf "device %.1f us (%.2f GB/s busbw), host %.1f us (%.2f GB/s): %.2f x the host path%s", d, b / d / 1e3, h,
        b / h / 1e3, h / d, b == 8 ? sprintf(", %+.1f us (goal: at most +15)", d - h) :
        b >= 1048576 ? (h / d >= 0.9 ? " (goal 0.9: met)" : " (goal 0.9: not met)") : "" }')"
  done < <(grep '^RESULT gpu_staged_bench allreduce' "$1")
}
if ! chosen staged; then
  not_chosen "staged device memory"
elif [[ ! -x $bin/gpu_staged ]]; then
  row "staged device memory" SKIPPED "gpu_staged not built"
else
  quick_flag=()
  [[ $quick == 1 ]] && quick_flag=(--quick)
  step 200 "$LOG_DIR/staged.log" env COLL_TRANSPORTS=^shm,p2p "$bin/gpu_staged" --ranks 2,3,4 "${quick_flag[@]}"
  staged_rows $? "$LOG_DIR/staged.log" "staged over sockets"
  step 60 "$LOG_DIR/staged_faults.log" env COLL_TRANSPORTS=^shm,p2p COLL_TIMEOUT_MS=5000 "$bin/gpu_faults"
  status=$?
  if [[ $status == 0 ]]; then
    row "staged: rank killed mid-collective" PASS "$(grep -o 'error [0-9]* ms after the kill' "$LOG_DIR/staged_faults.log" | awk '{print $2}' | sort -n | tail -1) ms at most"
  elif [[ $status == 77 ]]; then
    row "staged: rank killed mid-collective" SKIPPED "$(head -1 "$LOG_DIR/staged_faults.log")"
  else
    row "staged: rank killed mid-collective" FAIL \
      "$(why $status "$LOG_DIR/staged_faults.log"): $(grep -m1 'FAIL\|^TIMEOUT' "$LOG_DIR/staged_faults.log" | cut -c1-150)"
  fi
  if [[ -n $sanitizer && $have_gpu == 1 ]]; then
    log=$LOG_DIR/staged_memcheck.log
    step 120 "$log" env COLL_TRANSPORTS=^shm,p2p "$sanitizer" --tool memcheck --target-processes all --error-exitcode 9 \
      "$bin/gpu_staged" --ranks 2 --filter "count 1 " --quick
    status=$?
    row "staged: compute-sanitizer memcheck 2" "$([[ $status == 0 ]] && echo PASS || echo FAIL)" \
      "$(grep -m1 'ERROR SUMMARY\|^FAIL' "$log" | sed 's/^=* *//') $([[ $status != 0 ]] && why $status "$log")"
  else
    row "staged: compute-sanitizer memcheck" SKIPPED "no GPU, or compute-sanitizer not found"
  fi
  # A CUDA graph of staged calls replayed between eager ones (the proxy hears of each from the
  # stream, in the kernels' order), 2 and 3 thread ranks with every peer staged over sockets.
  api_row "staged: graph capture and replay" "$LOG_DIR/staged_graph.log" COLL_TRANSPORTS=^shm,p2p GPU_API_ONLY=graph
  step 120 "$LOG_DIR/staged_hosts.log" "$bin/gpu_staged" --ranks 4 --hosts 2 "${quick_flag[@]}"
  staged_rows $? "$LOG_DIR/staged_hosts.log" "two levels: P2P in 2 COLL_HOSTID hosts, staged between"
  emulator=$BUILD_DIR/tests/verbs_emulator/libcoll_verbs_emulator.so
  if [[ -f $emulator ]]; then
    step 120 "$LOG_DIR/staged_verbs.log" env COLL_TRANSPORTS=verbs,staged "COLL_VERBS_LIBRARY=$(cd "$(dirname "$emulator")" && pwd)/$(basename "$emulator")" \
      COLL_VERBS_EMU_REGISTRY=/dev/shm/coll-verbs-emu-gpu-check-$$ "$bin/gpu_staged" --ranks 2,3 --quick
    staged_rows $? "$LOG_DIR/staged_verbs.log" "staged over the verbs emulator"
  else
    row "staged over the verbs emulator" SKIPPED "not built (no infiniband/verbs.h where the build was made)"
  fi
  step 120 "$LOG_DIR/staged_bench.log" env COLL_TRANSPORTS=^shm,p2p "$bin/gpu_staged" --modes threads --bench "$BENCH_BYTES"
  status=$?
  if [[ $status == 0 ]]; then
    staged_bench_rows "$LOG_DIR/staged_bench.log"
  elif [[ $status == 77 ]]; then
    row "staged all-reduce measurements" SKIPPED "$(head -1 "$LOG_DIR/staged_bench.log")"
  else
    row "staged all-reduce measurements" FAIL "$(why $status "$LOG_DIR/staged_bench.log")"
  fi
fi

# 3. GPU correctness: one row per (mode, ranks).
status=0
chosen collectives && { step 240 "$LOG_DIR/collectives.log" "$bin/gpu_collectives" --ranks "$RANK_COUNTS" \
  --modes threads,processes; status=$?; }
if ! chosen collectives; then
  not_chosen "collectives on one GPU"
elif [[ $status == 77 ]]; then
  row "collectives on one GPU" SKIPPED "$(head -1 "$LOG_DIR/collectives.log")"
elif [[ $status == 124 || $status == 137 || $status == 125 ]]; then
  row "collectives on one GPU" FAIL "$(why $status "$LOG_DIR/collectives.log"): $(grep -c '^RESULT' "$LOG_DIR/collectives.log") runs done"
  grep -A12 '^RESULT\|^TIMEOUT' "$LOG_DIR/collectives.log" | head -20
else
  while read -r _ _ mode n cases result secs; do
    row "collectives $mode ${n%:}" "$result" "$cases cases, $secs"
  done < <(grep '^RESULT gpu_collectives' "$LOG_DIR/collectives.log" | tr -d ',()' | sed 's/ cases//')
  [[ $status != 0 ]] && grep -v '^RESULT' "$LOG_DIR/collectives.log" | head -20
fi

# 3b. The variable-count collectives with a stream (tests/cuda/gpu_vcollectives.cc): the host
# suite's cases on device memory, threads and processes on one GPU, then staged over sockets and
# in two COLL_HOSTID hosts (--quick: float32 cases only).
if ! chosen vcollectives; then
  not_chosen "variable-count collectives"
elif [[ ! -x $bin/gpu_vcollectives ]]; then
  row "variable-count collectives" SKIPPED "gpu_vcollectives not built"
else
  vfilter=()
  [[ $quick == 1 ]] && vfilter=(--filter float32)
  step 150 "$LOG_DIR/vcollectives.log" "$bin/gpu_vcollectives" --ranks 2,3 "${vfilter[@]}"
  results_row "variable-count collectives, one GPU" $? "$LOG_DIR/vcollectives.log" gpu_vcollectives
  step 120 "$LOG_DIR/vcollectives_staged.log" env COLL_TRANSPORTS=^shm,p2p "$bin/gpu_vcollectives" --ranks 3 \
    --modes processes "${vfilter[@]}"
  results_row "variable-count collectives, staged" $? "$LOG_DIR/vcollectives_staged.log" gpu_vcollectives
  step 120 "$LOG_DIR/vcollectives_hosts.log" "$bin/gpu_vcollectives" --ranks 4 --modes processes --hosts 2 \
    "${vfilter[@]}"
  results_row "variable-count collectives, 2 hosts" $? "$LOG_DIR/vcollectives_hosts.log" gpu_vcollectives
fi

# 3c. ZeRO on device memory: the optimizer step against the host step, bit for bit, and its time
# against the copy rate measured in the same run (tests/cuda/gpu_zero_step.cc); the sharded
# communication with a stream against the host functions, on one GPU and staged over sockets
# (tests/cuda/gpu_zero_comm.cc).
if ! chosen zero; then
  not_chosen "ZeRO on device"
elif [[ ! -x $bin/gpu_zero_step || ! -x $bin/gpu_zero_comm ]]; then
  row "ZeRO on device" SKIPPED "gpu_zero_step or gpu_zero_comm not built"
else
  # --quick: 2 ranks as threads only, and no staged or sanitizer runs (the device minutes go to
  # the device-memory rows first).
  zranks=(--ranks 2,3)
  [[ $quick == 1 ]] && zranks=(--ranks 2 --modes threads)
  step 150 "$LOG_DIR/zero_comm.log" "$bin/gpu_zero_comm" "${zranks[@]}"
  results_row "ZeRO communication, one GPU" $? "$LOG_DIR/zero_comm.log" gpu_zero_comm
  if [[ $quick == 0 ]]; then
    step 120 "$LOG_DIR/zero_comm_staged.log" env COLL_TRANSPORTS=^shm,p2p "$bin/gpu_zero_comm" --ranks 3 \
      --modes processes
    results_row "ZeRO communication, staged" $? "$LOG_DIR/zero_comm_staged.log" gpu_zero_comm
  fi
  zquick=()
  [[ $quick == 1 ]] && zquick=(--quick)
  step 120 "$LOG_DIR/zero_step.log" "$bin/gpu_zero_step" "${zquick[@]}"
  results_row "ZeRO step on device" $? "$LOG_DIR/zero_step.log" gpu_zero_step
  if [[ $quick == 0 && $have_gpu == 1 && -n $sanitizer ]]; then
    step 90 "$LOG_DIR/zero_step_memcheck.log" "$sanitizer" --tool memcheck --error-exitcode 9 \
      "$bin/gpu_zero_step" --small
    results_row "ZeRO step on device, memcheck" $? "$LOG_DIR/zero_step_memcheck.log" gpu_zero_step
  fi
fi

# 4. compute-sanitizer: processes (serialized mode never has a kernel wait on another's, so it
# runs even if the sanitizer serializes kernels), then threads (informational: if the sanitizer
# serializes the concurrent kernels, they time out instead of hanging).
if ! chosen sanitizer; then
  not_chosen "compute-sanitizer"
elif [[ $have_gpu == 1 && -n $sanitizer ]]; then
  # Small cases only (counts 1 and 0): the sanitizer slows kernels by orders of magnitude.
  for tool in memcheck racecheck synccheck; do
    for mode in processes threads; do
      [[ $quick == 1 && $tool != memcheck ]] && continue
      log=$LOG_DIR/sanitizer_${tool}_$mode.log
      step 90 "$log" "$sanitizer" --tool $tool --target-processes all --error-exitcode 9 \
        "$bin/gpu_collectives" --ranks 2 --modes "$mode" --filter "count 1 "
      status=$?
      if [[ $status == 0 ]]; then
        row "compute-sanitizer $tool $mode 2" PASS "$(grep -m1 'ERROR SUMMARY\|RACECHECK SUMMARY' "$log" | sed 's/^=* *//')"
      else
        row "compute-sanitizer $tool $mode 2" FAIL "$(why $status "$log"): $(grep -m1 'ERROR SUMMARY\|RACECHECK SUMMARY\|FAIL' "$log")"
      fi
    done
  done
else
  row "compute-sanitizer" SKIPPED "$([[ $have_gpu == 1 ]] && echo 'compute-sanitizer not found' || echo 'no GPU')"
fi

# 5. Measurements through the device path: BENCH_BYTES on 4 ranks (threads, then processes) and
# on 8 ranks (threads); with MPS, 4 processes again (step 5b). Each all-reduce is set against the
# device-to-device copy measured in the same run, twice: busbw / copy rate (the usual roofline for
# one rank per GPU), and the one-GPU roofline, n * BYTES / copy rate: ranks sharing a GPU share its
# memory, so every rank's input must be read and its output written through the same HBM.
bench_rows() {  # log prefix labels...
  local log=$1 prefix=$2
  shift 2
  local copy
  copy=$(awk '$1 == "RESULT" && $3 == "d2d_memcpy_bytes_per_s" { print $4; exit }' "$log")
  row "${prefix}cudaMemcpy D2D ($BENCH_BYTES B)" "$([[ -n $copy ]] && echo INFO || echo FAIL)" \
    "$(awk -v c="$copy" 'BEGIN { if (c != "") printf "%.1f GB/s", c / 1e9 }')"
  for label in "$@"; do
    local n=${label##*_n} busbw lat time
    n=${n%%_*}  # threads_n4_cma: 4
    busbw=$(awk -v l="$label" '$1 == "RESULT" && $2 == l && $3 == "allreduce_busbw" { print $4 }' "$log")
    time=$(awk -v l="$label" '$1 == "RESULT" && $2 == l && $3 == "allreduce_time" { print $4 }' "$log")
    lat=$(awk -v l="$label" '$1 == "RESULT" && $2 == l && $3 == "allreduce_8B_latency" { print $4 }' "$log")
    if [[ -n $busbw ]]; then
      row "${prefix}all-reduce $label busbw" INFO "$(awk -v b="$busbw" -v c="$copy" -v t="$time" -v n="$n" \
        -v s="$BENCH_BYTES" 'BEGIN { printf "%.1f GB/s, %.0f us (%.2f x D2D copy; %.2f of the one-GPU roofline n*S/copy)",
        b / 1e9, t, (c > 0 ? b / c : 0), (c > 0 && t > 0 ? n * s / c * 1e6 / t : 0) }')"
      row "${prefix}all-reduce $label 8 B latency" INFO "$lat us"
    else
      row "${prefix}all-reduce $label" FAIL "$log"
    fi
  done
  grep FAIL "$log" | head -5
}
# --sweep: the same all-reduce from 8 B up, for step 9's comparison with the ring. Thread ranks take
# the direct all-reduce from 128 B (src/plan/device_program.h), processes the ring.
status=0
chosen bench && { step 90 "$LOG_DIR/bench.log" "$bin/gpu_bench" --ranks 4 --bytes "$BENCH_BYTES" --sweep; status=$?; }
if ! chosen bench; then
  not_chosen "device all-reduce measurements"
elif [[ $status == 77 ]]; then
  row "device all-reduce measurements" SKIPPED "$(head -1 "$LOG_DIR/bench.log")"
else
  step 60 "$LOG_DIR/bench_n8.log" "$bin/gpu_bench" --ranks 8 --bytes "$BENCH_BYTES" --modes threads --sweep
  bench_rows "$LOG_DIR/bench.log" "" threads_n4 processes_n4
  bench_rows "$LOG_DIR/bench_n8.log" "" threads_n8
fi

# 5b. MPS: processes sharing a GPU through an MPS server run their kernels side by side, so the
# library uses the concurrent mode for them (transport/p2p: every rank on the GPU an MPS client).
# A private server (its own pipe folder) is started only for these runs and stopped after.
mps_control=$(command -v nvidia-cuda-mps-control || true)
if ! chosen mps; then
  not_chosen "MPS"
elif [[ $have_gpu == 1 && -n $mps_control && -x $bin/gpu_bench ]]; then
  mps_dir=$(mktemp -d /tmp/coll-mps.XXXXXX)
  export CUDA_MPS_PIPE_DIRECTORY=$mps_dir CUDA_MPS_LOG_DIRECTORY=$mps_dir
  if "$mps_control" -d >"$LOG_DIR/mps.log" 2>&1; then
    sleep 1
    step 90 "$LOG_DIR/mps_collectives.log" "$bin/gpu_collectives" --ranks 2,4 \
      --modes processes
    status=$?
    result=$(grep -c '^RESULT gpu_collectives.*PASS' "$LOG_DIR/mps_collectives.log")
    row "MPS: collectives processes n=2,4" "$([[ $status == 0 && $result == 2 ]] && echo PASS || echo FAIL)" \
      "$(grep '^RESULT' "$LOG_DIR/mps_collectives.log" | sed 's/RESULT gpu_collectives //' | tr '\n' ';')"
    # The direct all-reduce forced on the same processes: each call maps the peers' buffers first.
    step 90 "$LOG_DIR/mps_direct.log" env COLL_TIMEOUT_MS=5000 "$bin/gpu_collectives" --ranks 2,4 \
      --modes processes --filter AllReduce --algo allreduce:cma
    results_row "MPS: direct all-reduce (cma) processes n=2,4" $? "$LOG_DIR/mps_direct.log" gpu_collectives
    # Through the public API (each cma call exchanges the buffers by the host all-gather): the
    # ring and the direct kernel on the same 4 processes, BENCH_BYTES, values checked.
    for algo in ring cma; do
      step 60 "$LOG_DIR/mps_perf_$algo.log" env COLL_ALGO=allreduce:$algo "$BUILD_DIR/tools/collrun/collrun" -n 4 \
        "$BUILD_DIR/benchmarks/perf/all_reduce_perf" -m device -b "$BENCH_BYTES" -e "$BENCH_BYTES" -n 10 -w 3 -c 1
      perf_row "MPS: all_reduce_perf -m device n=4 $algo" $? "$LOG_DIR/mps_perf_$algo.log"
    done
    step 60 "$LOG_DIR/bench_mps.log" "$bin/gpu_bench" --ranks 4 \
      --bytes "$BENCH_BYTES" --modes processes
    bench_rows "$LOG_DIR/bench_mps.log" "MPS: " processes_n4
    echo quit | "$mps_control" >>"$LOG_DIR/mps.log" 2>&1
  else
    row "MPS" SKIPPED "the MPS server did not start: $(head -1 "$LOG_DIR/mps.log")"
  fi
  unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
else
  row "MPS" SKIPPED "no GPU, or no nvidia-cuda-mps-control"
fi

# 6. The perf program through the public API and collrun (processes: serialized mode).
perf=$BUILD_DIR/benchmarks/perf/all_reduce_perf
collrun=$BUILD_DIR/tools/collrun/collrun
if ! chosen perf; then
  not_chosen "all_reduce_perf -m device n=4"
elif [[ $have_gpu == 1 && -x $perf && -x $collrun ]]; then
  step 60 "$LOG_DIR/all_reduce_perf.log" "$collrun" -n 4 "$perf" -m device -b "$BENCH_BYTES" -e "$BENCH_BYTES" \
    -n 10 -w 3 -c 1
  perf_row "all_reduce_perf -m device n=4" $? "$LOG_DIR/all_reduce_perf.log"
else
  row "all_reduce_perf -m device n=4" SKIPPED "no GPU, or not built"
fi

# 7. NCCL through PyTorch, the same sizes, side by side.
if ! chosen nccl; then
  not_chosen "torch NCCL"
elif [[ $have_gpu == 1 ]] && python3 -c 'import torch, torch.distributed; assert torch.cuda.is_available()' 2>/dev/null; then
  step 120 "$LOG_DIR/torch_nccl.log" python3 tools/gpu_torch_nccl.py --ranks 4 --bytes "$BENCH_BYTES"
  status=$?
  if [[ $status == 0 ]]; then
    while read -r _ label metric value unit rest; do
      row "torch NCCL $label $metric" INFO "$value $unit $rest"
    done < <(grep '^RESULT' "$LOG_DIR/torch_nccl.log")
  else
    row "torch NCCL" FAIL "$(why $status "$LOG_DIR/torch_nccl.log"): $(tail -1 "$LOG_DIR/torch_nccl.log" | cut -c1-150)"
  fi
else
  row "torch NCCL" SKIPPED "no GPU, or no PyTorch with CUDA"
fi

# 8. The PyTorch backend on CUDA tensors: the extension built against this python3's torch and
# the installed libcollective (tools/gpu_torch_build.sh), then every operation, DDP, FSDP2 and
# ZeRO on 2 ranks sharing GPU 0 (tools/gpu_torch_check.py).
torch_prefix=${GPU_TORCH_PREFIX:-.gpu/install}
torch_row="torch 2.x backend on CUDA tensors"
if ! chosen torch; then
  not_chosen "$torch_row"
elif [[ ! -f $torch_prefix/lib/cmake/collective/collectiveConfig.cmake ]]; then
  row "$torch_row" SKIPPED "no installed libcollective in $torch_prefix (tools/gpu_torch_build.sh --prepare)"
elif [[ $have_gpu != 1 ]] || ! python3 -c 'import torch; assert torch.version.cuda and torch.cuda.is_available()' 2>/dev/null; then
  row "$torch_row" SKIPPED "no GPU, or no python3 torch with CUDA"
else
  step 150 "$LOG_DIR/torch_build.log" tools/gpu_torch_build.sh "$torch_prefix" "$LOG_DIR/torch-build"
  status=$?
  if [[ $status != 0 ]]; then
    row "$torch_row" FAIL "build: $(why $status "$LOG_DIR/torch_build.log")"
  else
    step 300 "$LOG_DIR/torch_cuda.log" env "$(grep '^PYTHONPATH=' "$LOG_DIR/torch_build.log")" \
      "$(grep '^LD_LIBRARY_PATH=' "$LOG_DIR/torch_build.log")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
      python3 tools/gpu_torch_check.py --ranks 2 --timeout 280
    status=$?
    summary=$(grep -m1 '^RESULT torch_collective summary' "$LOG_DIR/torch_cuda.log" | cut -d' ' -f4-)
    if [[ $status == 0 ]]; then
      row "$torch_row" PASS "$summary"
    else
      row "$torch_row" FAIL "$(why $status "$LOG_DIR/torch_cuda.log"): $summary"
      grep 'FAIL' "$LOG_DIR/torch_cuda.log" | head -10
    fi
  fi
fi

# 8b. The same PyTorch checks (DDP and FSDP2 on CUDA tensors against full-batch training among
# them) with every byte of device memory staged over sockets between the two rank processes, as
# between two hosts. Full mode only: the build of step 8 is reused.
staged_torch_row="torch backend on CUDA tensors, staged over sockets"
if ! chosen torch || ! chosen staged; then
  not_chosen "$staged_torch_row"
elif [[ $quick == 1 ]]; then
  row "$staged_torch_row" SKIPPED "not in --quick"
elif ! grep -q '^PYTHONPATH=' "$LOG_DIR/torch_build.log" 2>/dev/null; then
  row "$staged_torch_row" SKIPPED "the backend was not built in step 8"
else
  step 200 "$LOG_DIR/torch_cuda_staged.log" env COLL_TRANSPORTS=^shm,p2p "$(grep '^PYTHONPATH=' "$LOG_DIR/torch_build.log")" \
    "$(grep '^LD_LIBRARY_PATH=' "$LOG_DIR/torch_build.log")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    python3 tools/gpu_torch_check.py --ranks 2 --timeout 180
  status=$?
  summary=$(grep -m1 '^RESULT torch_collective summary' "$LOG_DIR/torch_cuda_staged.log" | cut -d' ' -f4-)
  row "$staged_torch_row" "$([[ $status == 0 ]] && echo PASS || echo FAIL)" "$summary $([[ $status != 0 ]] && why $status "$LOG_DIR/torch_cuda_staged.log")"
fi

# 8c. ZeRO on the GPU beside DeepSpeed (benchmarks/compare/zero_vs_deepspeed.py --device cuda): our
# engine, DeepSpeed's on our backend and on NCCL (where every rank has a GPU of its own), 2 ranks
# sharing GPU 0, the same GPT-style model, data and config: losses, step time, device memory.
# DeepSpeed comes from wheels made by tools/gpu_wheels.sh (GPU_WHEELS, default .whl, carried).
# Not in --quick (each run starts DeepSpeed anew): with GPU_CHECK_STEPS=torch,zerods a call of its
# own, stages 1-3 with and without both offloads, bf16, and the largest model in 4 GiB per rank.
zero_ds_row="ZeRO on CUDA beside DeepSpeed"
wheels=${GPU_WHEELS:-.whl}
if ! chosen zerods; then
  not_chosen "$zero_ds_row"
elif [[ $quick == 1 ]]; then
  row "$zero_ds_row" SKIPPED "not in --quick (GPU_CHECK_STEPS=torch,zerods runs it)"
elif ! grep -q '^PYTHONPATH=' "$LOG_DIR/torch_build.log" 2>/dev/null; then
  row "$zero_ds_row" SKIPPED "the backend was not built in step 8"
elif ! ls "$wheels"/deepspeed-*.whl >/dev/null 2>&1; then
  row "$zero_ds_row" SKIPPED "no DeepSpeed wheel in $wheels (tools/gpu_wheels.sh, then carry it)"
else
  site=$LOG_DIR/site
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" \
    "$wheels"/*.whl >"$LOG_DIR/zero_ds_install.log" 2>&1
  torch_path=$(grep '^PYTHONPATH=' "$LOG_DIR/torch_build.log" | cut -d= -f2-)
  zero_ds() {  # log, limit, benchmark arguments...
    local log=$1 limit=$2
    shift 2
    step "$limit" "$log" env "PYTHONPATH=$torch_path:$site" \
      "$(grep '^LD_LIBRARY_PATH=' "$LOG_DIR/torch_build.log")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
      python3 benchmarks/compare/zero_vs_deepspeed.py --device cuda --collrun "$BUILD_DIR/tools/collrun/collrun" \
      --ranks 2 --timeout 120 "$@"
  }
  gpt=(--model gpt --width 1024 --layers 2 --micro-batch 8)
  zero_ds "$LOG_DIR/zero_ds.log" 360 "${gpt[@]}" --stages 1 2 3 --offload none optimizer both --steps 10 \
    --warmups 3 --largest 4
  status=$?
  zero_ds "$LOG_DIR/zero_ds_bf16.log" 120 "${gpt[@]}" --stages 1 2 3 --offload none --bf16 --steps 10 --warmups 3
  bf16_status=$?
  [[ $status == 0 ]] && status=$bf16_status
  failed_runs=$(cat "$LOG_DIR"/zero_ds*.log 2>/dev/null | grep -c ': FAILED in')
  if [[ $status == 0 ]]; then
    row "$zero_ds_row" PASS "tables in $LOG_DIR/zero_ds*.log"
  else
    row "$zero_ds_row" FAIL "$(why $status "$LOG_DIR/zero_ds.log"): $failed_runs runs failed"
  fi
fi

# 9. The direct all-reduce (thread ranks of one process reduce straight from each other's buffers,
# kernels/cuda/direct_kernel.cuh; the planner's choice for them from 128 B), forced with
# COLL_ALGO=allreduce:cma so that 8 B runs it too, and the ring forced beside it: last, so that a
# failure of the newest kernel cannot take the budget of the rows above; its waits are bounded by
# 5 s of no progress (calls take milliseconds), so a broken meeting fails fast, not after
# the whole step. The API checks (its epochs across back-to-back calls, graph replays, two
# communicators, abort), every all-reduce case on threads, and the measurement against the ring.
if ! chosen direct; then
  not_chosen "direct all-reduce (cma)"
elif [[ -x $bin/gpu_bench ]]; then
  api_row "API, direct all-reduce (cma)" "$LOG_DIR/api_cma.log" COLL_ALGO=allreduce:cma COLL_TIMEOUT_MS=5000
  step 150 "$LOG_DIR/collectives_cma.log" env COLL_TIMEOUT_MS=5000 "$bin/gpu_collectives" --ranks "$RANK_COUNTS" \
    --modes threads --filter AllReduce --algo allreduce:cma
  results_row "direct all-reduce (cma) cases" $? "$LOG_DIR/collectives_cma.log" gpu_collectives
  # memcheck on the direct kernel's reads and writes of the peers' buffers (the float sums: 13 cases).
  if [[ -n $sanitizer ]]; then
    log=$LOG_DIR/sanitizer_memcheck_cma.log
    step 90 "$log" env COLL_TIMEOUT_MS=5000 "$sanitizer" --tool memcheck --error-exitcode 9 "$bin/gpu_collectives" \
      --ranks 2 --modes threads --filter "AllReduce float sum" --algo allreduce:cma
    status=$?
    summary=$(grep -m1 'ERROR SUMMARY\|FAIL\|no case' "$log" | sed 's/^=* *//')
    if [[ $status == 0 ]]; then
      row "compute-sanitizer memcheck, direct all-reduce" PASS "$summary"
    else
      row "compute-sanitizer memcheck, direct all-reduce" FAIL "$(why $status "$log"): $summary"
    fi
  else
    row "compute-sanitizer memcheck, direct all-reduce" SKIPPED "compute-sanitizer not found"
  fi
  # The ring forced on the same thread ranks, against step 5's runs (the planner's choice), size by size.
  for n in 4 8; do
    step 60 "$LOG_DIR/bench_ring_n$n.log" env COLL_TIMEOUT_MS=5000 "$bin/gpu_bench" --ranks $n \
      --bytes "$BENCH_BYTES" --modes threads --algo allreduce:ring --sweep
    if [[ $? == 77 ]]; then
      row "all-reduce threads_n${n}_ring" SKIPPED "$(head -1 "$LOG_DIR/bench_ring_n$n.log")"
    else
      bench_rows "$LOG_DIR/bench_ring_n$n.log" "" threads_n${n}_ring
      chosen_log=$LOG_DIR/bench.log
      [[ $n == 8 ]] && chosen_log=$LOG_DIR/bench_n8.log
      row "planner's choice against ring, $n threads" INFO "$(awk -v n=$n '$1 == "RESULT" && $3 == "allreduce_sweep" {
          if ($2 == "threads_n" n) chosen[$4] = $5; else if ($2 == "threads_n" n "_ring") ring[$4] = $5; sizes[$4] = 1 }
        END { for (b in sizes) printf "%s B: ring %s us, chosen %s us;\n", b, ring[b], chosen[b] }' \
        "$chosen_log" "$LOG_DIR/bench_ring_n$n.log" | sort -n | tr '\n' ' ')"
    fi
  done
else
  row "direct all-reduce (cma)" SKIPPED "not built"
fi

# 10. RDMA devices (the IB verbs transport, docs/transports.md): whether this machine has any, and
# if so all_reduce_perf on host memory with the transports forced to verbs, 2 ranks through the
# device's loopback. Neither the build machine nor CI has an RDMA device; this is where one may be.
rdma_devices=$(ls /sys/class/infiniband 2>/dev/null | tr '\n' ' ')
if ! chosen rdma; then
  not_chosen "RDMA devices"
elif [[ -z $rdma_devices ]]; then
  row "RDMA devices" NONE "/sys/class/infiniband is empty or absent: no verbs device to run on"
elif [[ -x $perf && -x $collrun ]]; then
  step 60 "$LOG_DIR/verbs_perf.log" env COLL_TRANSPORTS=verbs COLL_DEBUG=INFO "$collrun" -n 2 "$perf" \
    -b 8 -e 64M -f 8 -n 20 -w 5 -c 1
  perf_row "all_reduce_perf over verbs n=2 ($rdma_devices)" $? "$LOG_DIR/verbs_perf.log"
else
  row "RDMA devices" SKIPPED "devices $rdma_devices, but all_reduce_perf or collrun not built"
fi

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
