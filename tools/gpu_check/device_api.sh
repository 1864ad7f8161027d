# shellcheck shell=bash
# Steps 2-2d: the host-side device logic, the device path through the public API, a rank
# killed mid-collective, and what bounds a device wait.
# Sourced by tools/gpu_check.sh, in its order, with its variables and rows.sh's functions.

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
