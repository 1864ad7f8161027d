# shellcheck shell=bash
# Steps 3-3c: every collective, the variable-count ones and ZeRO's on device memory.
# Sourced by tools/gpu_check.sh, in its order, with its variables and rows.sh's functions.

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
  if [[ $status != 0 ]]; then
    row "collectives on one GPU, the run as a whole" FAIL "$(why $status "$LOG_DIR/collectives.log")"
    grep -v '^RESULT' "$LOG_DIR/collectives.log" | head -20
  fi
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
