# shellcheck shell=bash
# Steps 8-8b: the PyTorch backend on CUDA tensors, and staged over sockets.
# Sourced by tools/gpu_check.sh, in its order, with its variables and rows.sh's functions.

# 8. The PyTorch backend on CUDA tensors: the extension built against this python3's torch and
# the installed libcollective (tools/gpu_torch_build.sh), then every operation, DDP, FSDP2 and
# ZeRO on 2 ranks sharing GPU 0 (tools/gpu_torch_check.py).
torch_prefix=${GPU_TORCH_PREFIX:-.gpu/install}

# build_torch_backend CHECK: builds the extension (its PYTHONPATH and LD_LIBRARY_PATH lines in
# torch_build.log); false, with CHECK's row SKIPPED or FAIL, where it cannot be built. Steps 8 and
# 8c (zero_deepspeed.sh) build through it.
build_torch_backend() {
  local check=$1 status
  if [[ ! -f $torch_prefix/lib/cmake/collective/collectiveConfig.cmake ]]; then
    row "$check" SKIPPED "no installed libcollective in $torch_prefix (tools/gpu_torch_build.sh --prepare)"
    return 1
  elif [[ $have_gpu != 1 ]] ||
    ! python3 -c 'import torch; assert torch.version.cuda and torch.cuda.is_available()' 2>/dev/null; then
    row "$check" SKIPPED "no GPU, or no python3 torch with CUDA"
    return 1
  fi
  step 150 "$LOG_DIR/torch_build.log" tools/gpu_torch_build.sh "$torch_prefix" "$LOG_DIR/torch-build"
  status=$?
  if [[ $status != 0 ]]; then
    row "$check" FAIL "the backend's build: $(why $status "$LOG_DIR/torch_build.log")"
    return 1
  fi
}

torch_row="torch 2.x backend on CUDA tensors"
if ! chosen torch; then
  not_chosen "$torch_row"
elif build_torch_backend "$torch_row"; then
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
