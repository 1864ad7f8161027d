# shellcheck shell=bash
# Steps 9-10: the direct all-reduce forced against the ring, and RDMA devices where there are any.
# Sourced by tools/gpu_check.sh, in its order, with its variables and rows.sh's functions.

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
