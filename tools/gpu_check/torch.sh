# shellcheck shell=bash
# Steps 8-8c: the PyTorch backend on CUDA tensors, staged, and ZeRO beside DeepSpeed.
# Sourced by tools/gpu_check.sh, in its order, with its variables and rows.sh's functions.

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
