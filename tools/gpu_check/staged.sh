# shellcheck shell=bash
# Step 2e: device memory staged between "hosts" on one GPU.
# Sourced by tools/gpu_check.sh, in its order, with its variables and rows.sh's functions.

# 2e. Device memory between "hosts" on this one GPU (docs/cuda.md, "Device memory across
# hosts"): with P2P and shared memory left out (COLL_TRANSPORTS=^shm,p2p) every byte of device
# memory is staged through pinned host memory over sockets. Rank processes through the public
# API: every collective x type x op x size on 2, 3 and 4 ranks (--quick: float32, bfloat16,
# int32); a rank killed mid-collective; memcheck on the small cases; two COLL_HOSTID hosts with
# P2P inside each and staging between; the verbs emulator in place of sockets where the build has
# it; then the device all-reduce against the host all-reduce over the same sockets (2 thread
# ranks: concurrent kernels, as one GPU per host), and the device-to-host copy rate. Both ways of
# reducing what arrives run: the kernels reading the pinned slots (mapped, the default) and a copy
# engine moving each slot into device memory first (COLL_STAGED_RECV=copy), cases and timings.
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
  # A run that stopped part way (the timeout, a crash) fails although the rank counts it reached passed.
  if [[ $status != 0 ]]; then
    row "$label$([[ $any == 1 ]] && echo ', the run as a whole')" FAIL "$(why $status "$log")"
    grep '^FAIL\|^TIMEOUT' "$log" | head -10
  fi
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
staged_copy_rows() {  # mapped_log copy_log: copy-then-reduce against the mapped slots, size by size
  while read -r _ _ _ bytes _ dev _; do
    row "staged all-reduce $bytes B, copy-then-reduce" INFO "$(awk -v b="$bytes" -v c="$dev" -v m="$(awk -v b="$bytes" \
      '$1 == "RESULT" && $2 == "gpu_staged_bench" && $3 == "allreduce" && $4 == b { print $6 }' "$1")" 'BEGIN {
      printf "device %.1f us (%.2f GB/s busbw)", c, b / c / 1e3
      if (m != "") printf ", mapped %.1f us: copy-then-reduce %.2f x the mapped slots'"'"' speed", m, m / c }')"
  done < <(grep '^RESULT gpu_staged_bench allreduce' "$2")
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
  # --quick: 2 ranks and float32 alone, so that the later steps keep their share of the budget.
  copy_cases=(--ranks 2,3)
  [[ $quick == 1 ]] && copy_cases=(--ranks 2 --filter float32)
  step 120 "$LOG_DIR/staged_copy.log" env COLL_TRANSPORTS=^shm,p2p COLL_STAGED_RECV=copy "$bin/gpu_staged" \
    "${copy_cases[@]}" --quick
  staged_rows $? "$LOG_DIR/staged_copy.log" "staged, copy-then-reduce (COLL_STAGED_RECV=copy)"
  step 120 "$LOG_DIR/staged_bench.log" env COLL_TRANSPORTS=^shm,p2p "$bin/gpu_staged" --modes threads --bench "$BENCH_BYTES"
  status=$?
  if [[ $status == 0 ]]; then
    staged_bench_rows "$LOG_DIR/staged_bench.log"
  elif [[ $status == 77 ]]; then
    row "staged all-reduce measurements" SKIPPED "$(head -1 "$LOG_DIR/staged_bench.log")"
  else
    row "staged all-reduce measurements" FAIL "$(why $status "$LOG_DIR/staged_bench.log")"
  fi
  step 120 "$LOG_DIR/staged_bench_copy.log" env COLL_TRANSPORTS=^shm,p2p COLL_STAGED_RECV=copy "$bin/gpu_staged" \
    --modes threads --bench "$BENCH_BYTES"
  status=$?
  if [[ $status == 0 ]]; then
    staged_copy_rows "$LOG_DIR/staged_bench.log" "$LOG_DIR/staged_bench_copy.log"
  elif [[ $status != 77 ]]; then
    row "staged all-reduce, copy-then-reduce" FAIL "$(why $status "$LOG_DIR/staged_bench_copy.log")"
  fi
fi
