#!/usr/bin/env bash
# The sanitizer and fuzzing run of CI, on one clang build with AddressSanitizer and
# UndefinedBehaviorSanitizer (build-sanitize/):
#   1. the bootstrap, transport, kernel, common, fault and small multi-rank tests; a sanitizer
#      report ends its test process with a failure;
#   2. each libFuzzer target of tests/fuzz for FUZZ_SECONDS, from its seed corpus (copied: the
#      repository's is not written); a crash, report or leak fails the run and leaves the input
#      in build-sanitize/findings/.
#
# usage: tools/sanitize.sh [-h|--help] [--fuzz-only] [FUZZ_TARGET...]   (default: every target)
# environment: FUZZ_SECONDS (default 15), SANITIZE_BUILD_DIR (default build-sanitize),
#              JOBS (default nproc)
set -euo pipefail

fuzzOnly=0
case "${1:-}" in
  -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  --fuzz-only) fuzzOnly=1; shift ;;
esac

cd "$(dirname "$0")/.."
dir=${SANITIZE_BUILD_DIR:-build-sanitize}
seconds=${FUZZ_SECONDS:-15}
fuzzers=("$@")
[ ${#fuzzers[@]} -gt 0 ] || fuzzers=(fuzz_store_frames fuzz_net_wire fuzz_settings)
tests=(test_common test_bootstrap test_transport test_kernels test_faults test_every_algorithm)
[ $fuzzOnly -eq 0 ] || tests=()
if ! command -v clang++ >/dev/null; then
  echo "sanitize: clang++ is not installed (apt install clang; tools/install-deps.sh does)" >&2
  exit 1
fi

start=$(date +%s)
# CUDA, torch and the benchmarks are left out: the run is about the host code the network reaches.
CC=clang CXX=clang++ cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCOLL_BUILD_FUZZERS=ON \
  -DCOLL_SANITIZE=address,undefined -DCOLL_WITH_CUDA=OFF -DCOLL_WITH_TORCH=OFF -DCOLL_BUILD_BENCHMARKS=OFF \
  -DCOLL_BUILD_STATIC=OFF >/dev/null
cmake --build "$dir" --parallel "${JOBS:-$(nproc)}" --target "${tests[@]}" "${fuzzers[@]}"
echo "sanitize: built ${tests[*]} ${fuzzers[*]} in $(( $(date +%s) - start )) s"

# The first report fails the process; LeakSanitizer stays on.
export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
status=0
runTest() {  # runTest BINARY [GTEST_FILTER]
  local binary=$1 filter=${2:-*} t0 log
  t0=$(date +%s)
  log="$dir/$(basename "$binary").log"
  if "$dir/tests/$binary" --gtest_filter="$filter" --gtest_brief=1 >"$log" 2>&1; then
    echo "sanitize: ok   $binary ($(grep -o '[0-9]* tests\? from [0-9]* test suites\? ran' "$log" | head -1)) in $(( $(date +%s) - t0 )) s"
  else
    status=1
    echo "sanitize: FAIL $binary ($filter); the end of its output:"
    tail -60 "$log"
  fi
}
if [ $fuzzOnly -eq 0 ]; then
  runTest common/test_common
  # Left out: the store's memory-cap test measures the process's RSS, which ASan's quarantine of
  # freed blocks inflates (it grew by 400 MiB there against under 400 in a plain build).
  runTest bootstrap/test_bootstrap '-TcpStoreLimits.AFloodingClientIsRefusedAtTheStoresLimit'
  runTest transport/test_transport
  runTest kernels/test_kernels
  runTest faults/test_faults
  # Multi-rank: every algorithm forced on one host, threads and processes.
  runTest multirank/test_every_algorithm 'Table/EveryAlgorithm.ForcedOnOneHost/*'
fi

mkdir -p "$dir/findings"
for target in "${fuzzers[@]}"; do
  corpus="$dir/corpus/$target"
  mkdir -p "$corpus"
  cp -n tests/fuzz/corpus/"$target"/* "$corpus"/ 2>/dev/null || true
  log="$dir/$target.log"
  if "$dir/tests/fuzz/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$dir/findings/$target-" "$corpus" >"$log" 2>&1; then
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
    echo "sanitize: ok   $target: $runs inputs in $seconds s, corpus $(find "$corpus" -type f | wc -l) inputs"
  else
    status=1
    echo "sanitize: FAIL $target (its input is in $dir/findings/); the end of its log:"
    tail -40 "$log"
  fi
done
echo "sanitize: $( [ $status -eq 0 ] && echo passed || echo FAILED ) in $(( $(date +%s) - start )) s"
exit $status
