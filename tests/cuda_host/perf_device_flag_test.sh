#!/usr/bin/env bash
# -m device on a machine without a usable GPU: the perf program must exit non-zero and say why
# ("no CUDA device: ..."), alone and under collrun on 2 ranks RUNS times (default 10): whichever
# rank ends first, the reason is printed every time. Where a GPU is usable this refusal cannot
# happen: skipped (77).
# usage: perf_device_flag_test.sh ALL_REDUCE_PERF [COLLRUN [RUNS]]
set -uo pipefail
perf=$1
collrun=${2:-}
runs=${3:-10}
if command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  echo "SKIPPED: a GPU is present (nvidia-smi -L); the refusal is for machines without one"
  exit 77
fi
out=$("$perf" -m device -b 8 -e 8 -n 1 -w 0 2>&1)
rc=$?
echo "$out"
if [[ $rc -eq 0 ]]; then
  echo "FAIL: -m device without a GPU exited 0"
  exit 1
fi
if ! grep -q -- "-m device: no CUDA device: " <<<"$out"; then
  echo "FAIL: the message does not say 'no CUDA device'"
  exit 1
fi
# The default (-m absent) falls back to host memory and runs. (Its output is captured whole
# first: `perf | grep -q` under pipefail fails whenever grep exits before perf has written all.)
fallback=$("$perf" -b 8 -e 8 -n 1 -w 0 2>&1)
if ! grep -q "Using devices: host memory" <<<"$fallback"; then
  echo "$fallback"
  echo "FAIL: without -m the program did not fall back to host memory"
  exit 1
fi
if [ -n "$collrun" ]; then
  printed=0
  for ((i = 0; i < runs; i++)); do
    out=$("$collrun" -n 2 "$perf" -m device -b 8 -e 8 -n 1 -w 0 2>&1)
    rc=$?
    if [[ $rc -ne 0 ]] && grep -q -- "-m device: no CUDA device: " <<<"$out"; then
      printed=$((printed + 1))
    else
      echo "run $i: exit status $rc, output:"
      echo "$out"
    fi
  done
  echo "under collrun -n 2: the reason printed in $printed of $runs runs"
  [[ $printed -eq $runs ]] || { echo "FAIL: a run ended without its reason"; exit 1; }
fi
echo "ok: exit status $rc and a clear message"
