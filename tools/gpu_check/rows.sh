# shellcheck shell=bash
# The helpers of tools/gpu_check.sh: steps under the budget, and the rows of its table.
# Sourced by tools/gpu_check.sh, in its order, with its variables and rows.sh's functions.

# step LIMIT_S LOG CMD...: runs CMD under timeout with at most LIMIT_S seconds and what is left of
# the budget (less 20 s for the summary), stdout and stderr to LOG. Returns CMD's status, 124 when
# it was stopped, 125 when it did not start for lack of time.
step() {
  local limit=$1 log=$2
  shift 2
  local left=$((BUDGET_END - SECONDS - 20))
  ((left < limit)) && limit=$left
  if ((limit < 10)); then
    echo "not started: the script's budget is spent" >"$log"
    return 125
  fi
  timeout --kill-after=10 "$limit" "$@" >"$log" 2>&1
}

# What a failed step's row says: stopped by the timeout, not started, or where to look.
why() {  # status log
  case $1 in
    124|137) echo "timed out; $2" ;;
    125) echo "not started: the budget (GPU_CHECK_BUDGET_S) is spent" ;;
    *) echo "exit $1; $2" ;;
  esac
}

# chosen STEP: whether GPU_CHECK_STEPS names STEP (or is empty: every step runs).
chosen() { [[ -z ${GPU_CHECK_STEPS:-} || ,$GPU_CHECK_STEPS, == *,$1,* ]]; }
not_chosen() { row "$1" SKIPPED "not in GPU_CHECK_STEPS ($GPU_CHECK_STEPS)"; }

row() {  # check, result, detail
  rows+=("$1|$2|$3")
  [[ $2 == FAIL ]] && failed=1
  printf '== %-34s %-8s %s\n' "$1" "$2" "$3"
}

# A row from a program's "RESULT PROGRAM ..." lines: SKIPPED where it exited 77 (its first line
# says why), PASS where it exited 0, else FAIL with why and the lines that are not results.
results_row() {  # check, status, log, program name the RESULT lines begin with
  local check=$1 status=$2 log=$3 program=$4 lines
  if [[ $status == 77 ]]; then
    row "$check" SKIPPED "$(head -1 "$log")"
    return
  fi
  lines=$(grep '^RESULT' "$log" | sed "s/^RESULT $program //" | cut -c1-160 | tr '\n' ';')
  if [[ $status == 0 ]]; then
    row "$check" PASS "$lines"
  else
    row "$check" FAIL "$lines $(why $status "$log")"
    grep -v '^RESULT' "$log" | head -20
  fi
}

perf_row() {  # check, status of the perf program's step, its log: its bus bandwidth or why it failed
  if [[ $2 == 0 ]]; then
    row "$1" PASS "$(grep 'Avg bus bandwidth' "$3")"
  else
    row "$1" FAIL "$(why "$2" "$3"): $(grep -m1 -i 'failed\|error' "$3" | cut -c1-150)"
  fi
}

# The device all-reduce's rows from a gpu_bench log (steps 5, 5b and 9): each set against the
# device-to-device copy measured in the same run.
bench_rows() {  # log prefix labels...
  local log=$1 prefix=$2
  shift 2
  local copy
  copy=$(awk '$1 == "RESULT" && $3 == "d2d_memcpy_bytes_per_s" { print $4; exit }' "$log")
  row "${prefix}cudaMemcpy D2D ($BENCH_BYTES B)" "$([[ -n $copy ]] && echo INFO || echo FAIL)" \
    "$(awk -v c="$copy" 'BEGIN { if (c != "") printf "%.1f GB/s", c / 1e9 }')"
  for label in "$@"; do
    local n=${label##*_n} busbw lat time
    n=${n%%_*}  # threads_n4_cma: 4
    busbw=$(awk -v l="$label" '$1 == "RESULT" && $2 == l && $3 == "allreduce_busbw" { print $4 }' "$log")
    time=$(awk -v l="$label" '$1 == "RESULT" && $2 == l && $3 == "allreduce_time" { print $4 }' "$log")
    lat=$(awk -v l="$label" '$1 == "RESULT" && $2 == l && $3 == "allreduce_8B_latency" { print $4 }' "$log")
    if [[ -n $busbw ]]; then
      row "${prefix}all-reduce $label busbw" INFO "$(awk -v b="$busbw" -v c="$copy" -v t="$time" -v n="$n" \
        -v s="$BENCH_BYTES" 'BEGIN { printf "%.1f GB/s, %.0f us (%.2f x D2D copy; %.2f of the one-GPU roofline n*S/copy)",
        b / 1e9, t, (c > 0 ? b / c : 0), (c > 0 && t > 0 ? n * s / c * 1e6 / t : 0) }')"
      row "${prefix}all-reduce $label 8 B latency" INFO "$lat us"
    else
      row "${prefix}all-reduce $label" FAIL "$log"
    fi
  done
  grep FAIL "$log" | head -5
}
