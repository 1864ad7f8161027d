#!/usr/bin/env bash
# Runs this build's programs on an older x86-64 CPU model under qemu's user-mode emulator: the
# kernel tests, the ZeRO optimizer-step tests (the other loops built per instruction set), and a
# 2-rank all_reduce_perf over every type and op with its results checked, with collrun and each
# rank emulated. Any instruction beyond the model's (AVX-512 in a -march=native build, say) ends a
# program with SIGILL, so this fails for a build that is not portable.
# COLL_CPU_KERNELS asks for avx512, which no model here has: the dispatcher must say so and fall
# back to EXPECTED, the fastest variant the model runs.
#
# qemu emulates AVX2 from version 7.2 (Debian 12's); AVX-512 not at all, so no model here has it.
#
# usage: qemu_cpu_test.sh MODEL EXPECTED COLLRUN ALL_REDUCE_PERF [TEST_KERNELS TEST_ZERO]
# Exits 77 (skipped, with the reason) where qemu-x86_64 is missing or the host is not x86-64.
set -uo pipefail
model=$1 expected=$2 collrun=$3 perf=$4 test_kernels=${5:-} test_zero=${6:-}

if [ "$(uname -m)" != x86_64 ]; then
  echo "SKIPPED: the host is $(uname -m); this test emulates older x86-64 CPUs with qemu-x86_64"
  exit 77
fi
if ! qemu=$(command -v qemu-x86_64); then
  echo "SKIPPED: qemu-x86_64 not found (Debian package qemu-user; tools/install-deps.sh installs it)"
  exit 77
fi
emulate=("$qemu" -cpu "$model")
export COLL_CPU_KERNELS=avx512

# qemu warns once per program about model features its emulator lacks (TSX, x2apic, ...): noise.
quiet() { grep -v "TCG doesn't support requested feature"; }
fail() {
  echo "FAILED on qemu -cpu $model: $*"
  exit 1
}
# The shell's status for a program qemu ended with a signal is 128 + the signal (SIGILL: 132).
why() { [ "$1" -eq 132 ] && echo "SIGILL, an instruction $model lacks" || echo "status $1"; }

# Runs a GoogleTest program with a filter: the whole output on failure; else the complaint about
# COLL_CPU_KERNELS and the counts (the variants the model lacks are skipped, one message each).
run_tests() {
  local program=$1 filter=$2 out status
  out=$("${emulate[@]}" "$program" --gtest_filter="$filter" 2>&1)
  status=$?
  if [ "$status" -ne 0 ]; then
    echo "$out" | quiet
    fail "$(basename "$program"): $(why "$status")"
  fi
  echo "$out" | grep -E "COLL_CPU_KERNELS|^\[==========\]|^\[  (PASSED  |SKIPPED )\] [0-9]"
}

if [ -n "$test_kernels" ]; then
  # Every test of the variant choice and the conversions, and every variant the model runs on
  # random inputs (EveryVariant); the reduce matrix for 3 sources (one pass over the sources) and 9
  # (blocked) in the variant the dispatcher picks for the model only: the full matrix takes
  # minutes under emulation, every variant's arithmetic is checked natively anyway, and the
  # generic variant's matrix is the Nehalem run's own (under Haswell it took half the run's time).
  run_tests "$test_kernels" "HostKernels*:Half*:Bfloat16*:ReduceCopy*:ReduceNames*:EveryVariant/*:*/${expected}_*_3src_2dst:*/${expected}_*_9src_2dst"
fi
if [ -n "$test_zero" ]; then
  # The optimizer steps and the norm through the public calls (the variant the dispatcher chose),
  # and every variant the model runs against the generic one: no ranks, a few seconds.
  run_tests "$test_zero" '*ZeroOptimizer*:ZeroSquaredNorm*'
fi

out=$(COLL_DEBUG=INFO COLL_DEBUG_SUBSYS=INIT "${emulate[@]}" "$collrun" -n 2 --timeout 100 "${emulate[@]}" "$perf" \
  -b 8 -e 1M -f 8 -d all -o all -n 5 -w 1 -c 1 -m host 2>&1)
status=$?
echo "$out" | quiet
[ "$status" -eq 0 ] || fail "collrun -n 2 all_reduce_perf: $(why "$status")"
grep -q "# Out of bounds values : 0 OK" <<<"$out" || fail "all_reduce_perf did not report correct results"
grep -q 'COLL_CPU_KERNELS="avx512": this CPU cannot run the avx512 kernels' <<<"$out" ||
  fail "no complaint that COLL_CPU_KERNELS=avx512 cannot run here"
[ "$(grep -c "host kernels: $expected\$" <<<"$out")" -eq 2 ] || fail "both ranks should report host kernels: $expected"
echo "PASSED on qemu -cpu $model: test_kernels, test_zero's optimizer tests and 2-rank all_reduce_perf," \
  "host kernels $expected"
