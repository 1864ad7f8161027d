# shellcheck shell=bash
# Steps 8c-8d: ZeRO on the GPU beside DeepSpeed, and the largest model per stage.
# Sourced by tools/gpu_check.sh, in its order, with its variables and rows.sh's functions.

# 8c. benchmarks/compare/zero_vs_deepspeed.py --device cuda: our engine, DeepSpeed's on our
# backend and on NCCL (where every rank has a GPU of its own), 2 ranks sharing GPU 0, the same
# GPT-style model, data and config: losses, step time, device memory at setup and in training.
# DeepSpeed comes from wheels made by tools/gpu_wheels.sh (GPU_WHEELS, default .whl, carried).
# Not in --quick (each run starts DeepSpeed anew): GPU_CHECK_STEPS=zerods is a call of its own
# (it builds the backend as step 8 does where step 8 did not run): stages 1-3 with and without
# both offloads in float32, then in bf16, each under a budget that fits the call.
# 8d. GPU_CHECK_STEPS=zerolargest (a call of its own too): the largest model in 4 GiB per rank,
# stages 1-3, for the offload choices in GPU_CHECK_LARGEST_OFFLOAD (default none; with offload the
# models grow large and the host's step long, so "optimizer both" is best a call of its own).
zero_ds_row="ZeRO on CUDA beside DeepSpeed"
largest_row="ZeRO: the largest model in 4 GiB per rank"
wheels=${GPU_WHEELS:-.whl}

# zero_ds_ready ROW: installs DeepSpeed's wheels and builds the backend where needed; false (with
# the row SKIPPED or FAIL) where it cannot run.
zero_ds_ready() {
  local check=$1
  if [[ $quick == 1 ]]; then
    row "$check" SKIPPED "not in --quick (a call of its own: GPU_CHECK_STEPS=zerods or zerolargest)"
    return 1
  elif [[ $have_gpu != 1 ]] || ! python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
    row "$check" SKIPPED "no GPU, or no python3 torch with CUDA"
    return 1
  elif ! ls "$wheels"/deepspeed-*.whl >/dev/null 2>&1; then
    row "$check" SKIPPED "no DeepSpeed wheel in $wheels (tools/gpu_wheels.sh, then carry it)"
    return 1
  fi
  # Built by step 8 in this run, or now.
  grep -q '^PYTHONPATH=' "$LOG_DIR/torch_build.log" 2>/dev/null || build_torch_backend "$check" || return 1
  site=$LOG_DIR/site
  if [[ ! -d $site/deepspeed ]] && ! python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
    --upgrade --target "$site" "$wheels"/*.whl >"$LOG_DIR/zero_ds_install.log" 2>&1; then
    row "$check" FAIL "pip could not install $wheels: $(tail -1 "$LOG_DIR/zero_ds_install.log" | cut -c1-150)"
    return 1
  fi
  torch_path=$(grep '^PYTHONPATH=' "$LOG_DIR/torch_build.log" | cut -d= -f2-)
}

zero_ds() {  # log, step limit, benchmark arguments...
  local log=$1 limit=$2
  shift 2
  step "$limit" "$log" env "PYTHONPATH=$torch_path:$site" \
    "$(grep '^LD_LIBRARY_PATH=' "$LOG_DIR/torch_build.log")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    python3 benchmarks/compare/zero_vs_deepspeed.py --device cuda --collrun "$BUILD_DIR/tools/collrun/collrun" \
    --ranks 2 --require-deepspeed "$@"
}

# zero_ds_result CHECK STATUS LOGS...: PASS, or FAIL with the runs that failed or were left out.
zero_ds_result() {
  local check=$1 status=$2
  shift 2
  local failed_runs
  failed_runs=$(cat "$@" 2>/dev/null | grep -c '^RUN .*: failed\|not run: --budget')
  if [[ $status == 0 ]]; then
    row "$check" PASS "tables in $*"
  else
    row "$check" FAIL "$(why "$status" "$1"): $failed_runs runs failed or left out"
    grep -h '^RUN .*: failed\|DeepSpeed does not import' "$@" | head -10
  fi
}

gpt=(--model gpt --width 1024 --layers 2 --micro-batch 8)
if ! chosen zerods; then
  not_chosen "$zero_ds_row"
elif zero_ds_ready "$zero_ds_row"; then
  zero_ds "$LOG_DIR/zero_ds.log" 240 "${gpt[@]}" --stages 1 2 3 --offload none optimizer both --steps 10 \
    --warmups 3 --timeout 60 --budget 225
  status=$?
  zero_ds "$LOG_DIR/zero_ds_bf16.log" 120 "${gpt[@]}" --stages 1 2 3 --offload none --bf16 --steps 10 --warmups 3 \
    --timeout 40 --budget 110
  bf16_status=$?
  [[ $status == 0 ]] && status=$bf16_status
  zero_ds_result "$zero_ds_row" "$status" "$LOG_DIR/zero_ds.log" "$LOG_DIR/zero_ds_bf16.log"
fi

if ! chosen zerolargest; then
  not_chosen "$largest_row"
elif zero_ds_ready "$largest_row"; then
  read -r -a largest_offloads <<<"${GPU_CHECK_LARGEST_OFFLOAD:-none}"
  zero_ds "$LOG_DIR/zero_largest.log" 360 "${gpt[@]}" --stages 1 2 3 --offload "${largest_offloads[@]}" \
    --steps 2 --warmups 1 --timeout 60 --budget 345 --largest 4
  zero_ds_result "$largest_row" $? "$LOG_DIR/zero_largest.log"
fi
