#!/usr/bin/env bash
# Init plus one 8-byte all-reduce on N ranks of this machine, against a bound proportional to what
# one rank alone takes: a job whose per-rank cost grows with n (every pair connected, n² store
# requests, a FIFO for every local pair) misses it; one whose per-rank cost grows as log n keeps
# well inside. The bound is FACTOR x N x (one rank's time) / cores, from medians of 3 runs measured
# here and now, so a slower or busier machine moves both sides alike.
#
# usage: scale_init_test.sh COLLRUN ALL_REDUCE_PERF [N] [FACTOR]     (defaults: 128 ranks, 4)
# environment: the ranks' (e.g. COLL_TRANSPORTS=self,net for sockets only).
set -euo pipefail

if [[ $# -lt 2 || $# -gt 4 ]]; then
  echo "usage: $0 COLLRUN ALL_REDUCE_PERF [N] [FACTOR]" >&2
  exit 2
fi
collrun=$1 perf=$2 n=${3:-128} factor=${4:-4}
cores=$(nproc)

# Seconds one run of `collrun -n RANKS perf` takes, init to exit.
run_seconds() {
  local ranks=$1 start end
  start=$(date +%s.%N)
  "$collrun" -n "$ranks" --timeout 120 "$perf" -b 8 -e 8 -n 1 -w 0 >/dev/null
  end=$(date +%s.%N)
  awk -v a="$start" -v b="$end" 'BEGIN { printf "%.6f\n", b - a }' 
}

median3() { printf '%s\n' "$@" | sort -g | sed -n 2p; }

one=$(median3 "$(run_seconds 1)" "$(run_seconds 1)" "$(run_seconds 1)")
many=$(median3 "$(run_seconds "$n")" "$(run_seconds "$n")" "$(run_seconds "$n")")
bound=$(awk -v f="$factor" -v n="$n" -v t="$one" -v c="$cores" 'BEGIN { printf "%.6f\n", f * n * t / c }')
printf 'one rank: %.3f s; %d ranks: %.3f s; bound %d x %d x %.3f s / %d cores = %.3f s\n' \
  "$one" "$n" "$many" "$factor" "$n" "$one" "$cores" "$bound"
if awk -v m="$many" -v b="$bound" 'BEGIN { exit !(m <= b) }'; then
  echo "PASS: $n ranks initialise and all-reduce within the bound"
  exit 0
fi
echo "FAIL: $n ranks took $many s, more than $bound s: the per-rank cost of init grows with n" >&2
exit 1
