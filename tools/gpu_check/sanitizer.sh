# shellcheck shell=bash
# Step 4: compute-sanitizer on small cases.
# Sourced by tools/gpu_check.sh, in its order, with its variables and rows.sh's functions.

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
