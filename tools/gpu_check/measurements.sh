# shellcheck shell=bash
# Steps 5-7: the device all-reduce measured, on MPS, through all_reduce_perf, and NCCL beside it.
# Sourced by tools/gpu_check.sh, in its order, with its variables and rows.sh's functions.

# 5. Measurements through the device path: BENCH_BYTES on 4 ranks (threads, then processes) and
# on 8 ranks (threads); with MPS, 4 processes again (step 5b). Each all-reduce is set against the
# device-to-device copy measured in the same run, twice: busbw / copy rate (the usual roofline for
# one rank per GPU), and the one-GPU roofline, n * BYTES / copy rate: ranks sharing a GPU share its
# memory, so every rank's input must be read and its output written through the same HBM.
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
