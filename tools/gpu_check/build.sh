# shellcheck shell=bash
# Step 1: the programs, built here with CUDA or unpacked from tools/gpu_pack.sh's archive.
# Sourced by tools/gpu_check.sh, in its order, with its variables and rows.sh's functions.

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
