#!/usr/bin/env bash
# What CI runs: install the dependencies, build with warnings as errors, run the whole test suite.
# Exits with ctest's status. Arguments go to ctest (e.g. -R store, -L unit, --repeat until-fail:3).
# Ends with a summary that names every family of tests that did not run, and why.
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: tools/test.sh [-h|--help] [CTEST_ARGS...]

  1. tools/install-deps.sh
  2. cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DCOLL_WERROR=ON -DCOLL_WITH_CUDA=AUTO, then
     builds everything (a folder tools/quickstart.sh configured is reconfigured: it finds the torch
     2.x environment made in step 1 and the CUDA compiler quickstart left out without a GPU)
  3. tools/sanitize.sh: an ASan+UBSan clang build of the bootstrap, transport, kernel, fault and
     small multi-rank tests, run, then each libFuzzer target for FUZZ_SECONDS (default 10), then
     a ThreadSanitizer build of the suites whose threads share a process, run
  4. ctest --test-dir build --output-on-failure -j $CTEST_JOBS CTEST_ARGS...
  5. a summary (tools/test_summary.py): tests passed, failed and skipped, and every family of tests
     that did not run (left out at configure, or skipped at run time) with the reason

environment:
  BUILD_DIR   build directory (default: build)
  BUILD_TYPE  CMake build type (default: Release)
  JOBS        parallel build jobs (default: nproc)
  CTEST_JOBS  tests run at once (default: 2: every test passes with another beside it, as it
              must under load; the GPU, multihost and scale tests run alone). How long a clean
              clone takes, with ccache's cache warm and cold (cmake/compiler_cache.cmake):
              docs/performance.md, "CI time"
  SKIP_DEPS=1 do not run tools/install-deps.sh
  COLL_WITH_CUDA   AUTO (default), ON or OFF: the CUDA kernels and GPU tests
  SKIP_SANITIZE=1  do not run tools/sanitize.sh (it is skipped anyway when CTEST_ARGS are given)
USAGE
}

case "${1:-}" in
  -h|--help) usage; exit 0 ;;
esac

cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-$(nproc)}
CTEST_JOBS=${CTEST_JOBS:-2}

if [ "${SKIP_DEPS:-0}" != 1 ]; then
  tools/install-deps.sh
fi
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" -DCOLL_WERROR=ON \
      -DCOLL_WITH_CUDA="${COLL_WITH_CUDA:-AUTO}"
cmake --build "$BUILD_DIR" --parallel "$JOBS"

# The sanitizer and fuzzing run goes first, so that ctest's summary ends the log. A selection of
# tests (CTEST_ARGS) means a partial run: no sanitizer run then.
sanitizeStatus=0
sanitizeRun="ran"
if [ "${SKIP_SANITIZE:-0}" = 1 ]; then
  sanitizeRun="NOT RUN (SKIP_SANITIZE=1)"
elif [ $# -gt 0 ]; then
  sanitizeRun="NOT RUN (a selection of tests was given)"
else
  FUZZ_SECONDS=${FUZZ_SECONDS:-10} JOBS="$JOBS" tools/sanitize.sh || sanitizeStatus=$?
fi

status=0
junit="$(cd "$BUILD_DIR" && pwd)/ctest-results.xml"
rm -f "$junit"
ctest --test-dir "$BUILD_DIR" --output-on-failure --output-junit "$junit" -j "$CTEST_JOBS" "$@" || status=$?
# ctest prints its own summary ("N% tests passed, M tests failed out of K"); then every family that
# did not run, and how we end.
python3 tools/test_summary.py "$BUILD_DIR" "$junit" || echo "test.sh: tools/test_summary.py failed"
echo "Sanitizers and fuzzers (tools/sanitize.sh): $sanitizeRun, status $sanitizeStatus"
echo "test.sh: ctest exited with status $status; tools/sanitize.sh exited with status $sanitizeStatus"
[ "$status" -ne 0 ] || status=$sanitizeStatus
exit "$status"
