#!/usr/bin/env bash
# The sanitizer and fuzzing run of CI, on two clang builds:
#   1. AddressSanitizer + UndefinedBehaviorSanitizer (build-sanitize/): the bootstrap, transport,
#      kernel, common, fault and small multi-rank tests; a sanitizer report ends its test
#      process with a failure;
#   2. each libFuzzer target of tests/fuzz for FUZZ_SECONDS, from its seed corpus (copied: the
#      repository's is not written), on the same build; a crash, report or leak fails the run
#      and leaves the input in build-sanitize/findings/;
#   3. ThreadSanitizer (build-tsan/): the suites where threads share a process (the store's
#      server and clients, the socket transport's progress thread, ranks as threads, abort and
#      errors from other threads, the ZeRO step's helpers); a data race or lock-order report
#      fails the run.
#
# usage: tools/sanitize.sh [-h|--help] [--fuzz-only | --thread-only | --no-thread] [FUZZ_TARGET...]
#        (default: all three steps, every fuzz target)
# environment: FUZZ_SECONDS (default 15), SANITIZE_BUILD_DIR (default build-sanitize),
#              TSAN_BUILD_DIR (default build-tsan), JOBS (default nproc: the build's jobs, and how
#              many test programs and fuzzers of a step run side by side)
set -euo pipefail

runAsan=1 runFuzz=1 runThread=1
case "${1:-}" in
  -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  --fuzz-only) runAsan=0; runThread=0; shift ;;
  --thread-only) runAsan=0; runFuzz=0; shift ;;
  --no-thread) runThread=0; shift ;;
esac

cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-15}
fuzzers=("$@")
[ ${#fuzzers[@]} -gt 0 ] || fuzzers=(fuzz_store_frames fuzz_net_wire fuzz_settings fuzz_records)
[ $runFuzz -eq 1 ] || fuzzers=()
if ! command -v clang++ >/dev/null; then
  echo "sanitize: clang++ is not installed (apt install clang; tools/install-deps.sh does)" >&2
  exit 1
fi

start=$(date +%s)
status=0
# buildWith DIR SANITIZERS FUZZERS(ON|OFF) TARGET...: one clang build of the given targets. CUDA,
# torch and the benchmarks are left out: the run is about the host code the network and the
# threads reach. -O1, as the sanitizers' documentation advises: the instrumented kernels (the SIMD
# variants' templates) compiled at -O2 took about twice as long (docs/performance.md, "CI time"),
# and the build is most of the step's time.
buildWith() {
  local buildDir=$1 sanitizers=$2 fuzzerHooks=$3 t0
  shift 3
  t0=$(date +%s)
  CC=clang CXX=clang++ cmake -S . -B "$buildDir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g -DNDEBUG" -DCOLL_BUILD_FUZZERS="$fuzzerHooks" \
    -DCOLL_SANITIZE="$sanitizers" -DCOLL_WITH_CUDA=OFF -DCOLL_WITH_TORCH=OFF -DCOLL_BUILD_BENCHMARKS=OFF \
    -DCOLL_BUILD_STATIC=OFF >/dev/null
  cmake --build "$buildDir" --parallel "${JOBS:-$(nproc)}" --target "$@"
  echo "sanitize: built $* with $sanitizers in $(( $(date +%s) - t0 )) s"
}
# The test programs and fuzzers of a step run side by side, JOBS at a time (each is one process
# that mostly keeps one core busy); their summaries are printed in the order they were started.
parallel=${JOBS:-$(nproc)}
summaries=()
# startJob SUMMARY COMMAND...: runs COMMAND in the background, its output to SUMMARY and its exit
# status to SUMMARY.rc, once fewer than $parallel jobs run.
startJob() {
  local summary=$1
  shift
  while [ "$(jobs -rp | wc -l)" -ge "$parallel" ]; do wait -n || true; done
  (
    rc=0
    "$@" >"$summary" 2>&1 || rc=$?
    echo "$rc" >"$summary.rc"
  ) &
  summaries+=("$summary")
}
# finishJobs: waits for every job, prints their summaries; a failed one fails the run.
finishJobs() {
  wait || true
  local summary
  for summary in "${summaries[@]}"; do
    cat "$summary"
    [ "$(cat "$summary.rc" 2>/dev/null)" = 0 ] || status=1
  done
  summaries=()
}
# testJob DIR BINARY FILTER LOG: one test program; a sanitizer report fails its process.
testJob() {
  local buildDir=$1 binary=$2 filter=$3 log=$4 t0
  t0=$(date +%s)
  if "$buildDir/tests/$binary" --gtest_filter="$filter" --gtest_brief=1 >"$log" 2>&1; then
    echo "sanitize: ok   $binary ($(grep -o '[0-9]* tests\? from [0-9]* test suites\? ran' "$log" | tail -1)) in $(( $(date +%s) - t0 )) s"
  else
    echo "sanitize: FAIL $binary ($filter); the end of its output:"
    tail -60 "$log"
    return 1
  fi
}
# runTest DIR BINARY [GTEST_FILTER]: starts testJob.
runTest() {
  local buildDir=$1 binary=$2 filter=${3:-*} log
  log="$buildDir/$(basename "$binary").log"
  startJob "$log.summary" testJob "$buildDir" "$binary" "$filter" "$log"
}

# 1 and 2: AddressSanitizer + UndefinedBehaviorSanitizer, and the fuzzers on the same build.
dir=${SANITIZE_BUILD_DIR:-build-sanitize}
asanTests=(test_common test_bootstrap test_transport test_kernels test_faults test_api test_every_algorithm)
[ $runAsan -eq 1 ] || asanTests=()
if [ $(( ${#asanTests[@]} + ${#fuzzers[@]} )) -gt 0 ]; then
  buildWith "$dir" address,undefined ON "${asanTests[@]}" "${fuzzers[@]}"
fi
# The first report fails the process; LeakSanitizer stays on.
export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
if [ $runAsan -eq 1 ]; then
  runTest "$dir" kernels/test_kernels  # the longest first: the others fit beside it
  runTest "$dir" common/test_common
  # Left out: the store's memory-cap test measures the process's RSS, which ASan's quarantine of
  # freed blocks inflates (it grew there far past its bound, which a plain build keeps); and the
  # hello-then-silent flood against the store, which measures whether real ranks finish their
  # handshake before the flood turns the store's room over: ASan slows the store's side of that
  # race (1 run in 10 beside two busy loops shut a rank out, as docs/security.md says a flood that
  # fast can), and the plain build runs it under ctest's load.
  runTest "$dir" bootstrap/test_bootstrap \
    '-TcpStoreLimits.AFloodingClientIsRefusedAtTheStoresLimit:ListenerFloods.HellosThenSilenceAgainstTheStoreLetRealRanksIn'
  runTest "$dir" transport/test_transport
  runTest "$dir" faults/test_faults
  # Every bad-argument rule, where out-of-range enum values reach the API (UBSan's enum check).
  # Left out: the 1000 init/destroy cycles' RSS bound, which ASan's quarantine inflates several
  # times over, and Fork.* (a child forked while the id server's thread holds ASan's allocator lock
  # can hang in malloc: docs/security.md).
  runTest "$dir" api/test_api '-LifecycleLeaks.*:Fork.*'
  # Multi-rank: every algorithm forced on one host, ranks as processes.
  runTest "$dir" multirank/test_every_algorithm 'Table/EveryAlgorithm.ForcedOnOneHost/*'
fi

if [ ${#fuzzers[@]} -gt 0 ]; then mkdir -p "$dir/findings"; fi
# fuzzJob TARGET: one fuzzer for $seconds from its corpus; a crash, report or leak fails it.
fuzzJob() {
  local target=$1 corpus="$dir/corpus/$1" log="$dir/$1.log" runs
  if "$dir/tests/fuzz/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$dir/findings/$target-" "$corpus" >"$log" 2>&1; then
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
    echo "sanitize: ok   $target: $runs inputs in $seconds s, corpus $(find "$corpus" -type f | wc -l) inputs"
  else
    echo "sanitize: FAIL $target (its input is in $dir/findings/); the end of its log:"
    tail -40 "$log"
    return 1
  fi
}
for target in "${fuzzers[@]}"; do
  mkdir -p "$dir/corpus/$target"
  cp -n tests/fuzz/corpus/"$target"/* "$dir/corpus/$target"/ 2>/dev/null || true
  startJob "$dir/$target.summary" fuzzJob "$target"
done
finishJobs

# 3: ThreadSanitizer on the suites whose threads share memory. No suppressions: the hand-offs
# between threads are C++ atomics and mutexes, which TSan models. What it cannot see is said in
# docs/security.md: each rank maps the shared-memory segments at its own address, even when the
# ranks are threads of one process, so TSan never relates two ranks' accesses to one segment.
if [ $runThread -eq 1 ]; then
  tdir=${TSAN_BUILD_DIR:-build-tsan}
  buildWith "$tdir" thread OFF test_bootstrap test_transport test_faults test_api test_collectives test_zero_threads
  # halt_on_error: the first report fails the process. report_thread_leaks=0: the harness's
  # forked children inherit TSan's record of the parent's threads (the parent's unique-id
  # servers), which do not exist in a child and are reported as leaked at its exit; threads that
  # really outlive their communicator are caught by LifecycleLeaks.* in the plain build.
  export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:report_thread_leaks=0:second_deadlock_stack=1}
  # Left out: the memory-cap test (TSan's shadow memory inflates RSS, as ASan's quarantine does).
  runTest "$tdir" multirank/test_collectives 'Ranks/CollectivesAsThreads*'  # the longest first
  # Left out as well: the floods against a store under a 1,024-descriptor limit, which runs in a
  # child forked from the threaded test process and starts the store's thread there (TSan refuses
  # that, as Fork.*).
  runTest "$tdir" bootstrap/test_bootstrap \
    '-TcpStoreLimits.AFloodingClientIsRefusedAtTheStoresLimit:ListenerFloods.TheStoreUnderTheUsualDescriptorLimitLetsARealRankIn:ListenerFloods.HellosThenSilenceAgainstTheStoreLetRealRanksIn'
  runTest "$tdir" transport/test_transport
  # Left out: tests whose ranks are children forked from the test process after it started a
  # thread (the unique id's server), which then start their own (the communicator's watcher):
  # TSan refuses new threads in such a child. Fork.*, StallBlame.* and the count-refusal test;
  # the plain build runs them, and their subject is not threads sharing memory.
  runTest "$tdir" faults/test_faults '-StallBlame.*'
  runTest "$tdir" api/test_api '-Fork.*:BadInput.CountsNoBufferCanHoldAreRefusedAtOnce'
  runTest "$tdir" zero/test_zero_threads  # the host optimizer step's helper threads
  finishJobs
fi
echo "sanitize: $( [ $status -eq 0 ] && echo passed || echo FAILED ) in $(( $(date +%s) - start )) s"
exit $status
