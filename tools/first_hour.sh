#!/usr/bin/env bash
# A newcomer's first hour, walked and checked: a fresh clone, the README's two commands in the
# README's order, then the error cases a new user meets first. Run by hand before an issue about
# the README's path is called resolved (not from CI: it runs the whole suite inside itself).
set -uo pipefail

usage() {
  cat <<'USAGE'
usage: tools/first_hour.sh [--repo PATH_OR_URL] [--workdir DIR] [--no-test-sh] [--runs N] [-h|--help]

  1. git clone REPO (default: this repository) into WORKDIR/clone (default: a new folder in /tmp)
  2. tools/quickstart.sh there, timed: the seconds to the sweep's first row and to its end; the
     sweep must end with "Out of bounds values : 0 OK"
  3. tools/test.sh there, timed (unless --no-test-sh): it must exit 0 and end with its summary,
     and its build folder (configured first by quickstart) must register as many tests as a
     folder configured (and built) afterwards from the same clone
  4. the error cases:
     - without a GPU, collrun -n 2 all_reduce_perf -m device, N times (default 50): the reason
       ("no CUDA device") printed in every run
     - COLL_ALGO=bruck (an algorithm alone) with all_reduce_perf: runs and checks
     - COLL_ALGO=",,,": refused with a message naming the variable
     - tools/install-deps.sh while another holds its lock: says it waits, then succeeds
  Prints one line per check and a table at the end; exits 1 when any check failed.

A machine that has never seen the project is the real test (the Debian packages, the torch 2.x
environment and ccache's cache all start empty); on another the times are a warm machine's.
USAGE
}

here=$(cd "$(dirname "$0")/.." && pwd)
repo=$here workdir="" runTestSh=1 runs=50
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --repo) repo=$2; shift 2 ;;
    --workdir) workdir=$2; shift 2 ;;
    --no-test-sh) runTestSh=0; shift ;;
    --runs) runs=$2; shift 2 ;;
    *) echo "first_hour.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
[ -n "$workdir" ] || workdir=$(mktemp -d /tmp/first-hour.XXXXXX)
mkdir -p "$workdir"
clone=$workdir/clone
logs=$workdir/logs
mkdir -p "$logs"

results=()
failures=0
record() {  # NAME PASS|FAIL DETAIL
  results+=("$(printf '%-44s %-4s %s' "$1" "$2" "$3")")
  echo "first_hour: $2 $1: $3"
  [ "$2" = PASS ] || failures=$((failures + 1))
}

echo "first_hour: cloning $repo into $clone (logs in $logs)"
rm -rf "$clone"
git clone -q "$repo" "$clone" || { echo "first_hour: git clone failed"; exit 1; }
cd "$clone" || exit 1

# quickstart, with the time of its first table row taken as the output arrives.
start=$(date +%s.%N)
firstRow=""
tools/quickstart.sh 2>&1 | while IFS= read -r line; do
  printf '%s\n' "$line"
  if [ ! -e "$logs/first-row" ] && [[ $line =~ ^\ +[0-9]+\ +[0-9]+\ +float ]]; then
    echo "$(date +%s.%N)" >"$logs/first-row"
  fi
done >"$logs/quickstart.log"
quickstartStatus=${PIPESTATUS[0]}
end=$(date +%s.%N)
seconds() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", b - a }'; }
total=$(seconds "$start" "$end")
[ -e "$logs/first-row" ] && firstRow=$(seconds "$start" "$(cat "$logs/first-row")")
if [ "$quickstartStatus" -eq 0 ] && grep -q "Out of bounds values : 0 OK" "$logs/quickstart.log"; then
  record "quickstart.sh" PASS "first row after ${firstRow:-?} s, done after $total s"
else
  record "quickstart.sh" FAIL "exit $quickstartStatus after $total s (log: $logs/quickstart.log)"
fi

if [ $runTestSh -eq 1 ]; then
  start=$(date +%s)
  tools/test.sh >"$logs/test.log" 2>&1
  testStatus=$?
  minutes=$(( ($(date +%s) - start + 30) / 60 ))
  if [ $testStatus -eq 0 ] && grep -q "== test.sh summary ==" "$logs/test.log"; then
    record "test.sh" PASS "exit 0 after $minutes min; $(grep -m1 'tests run by ctest' "$logs/test.log")"
  else
    record "test.sh" FAIL "exit $testStatus after $minutes min (log: $logs/test.log)"
  fi
  sed -n '/== test.sh summary ==/,$p' "$logs/test.log"
  registered=$(ctest --test-dir build -N | sed -n 's/^Total Tests: //p')
  # GoogleTest's tests are listed once their programs are built: the folder configured afterwards is
  # built too (ccache's cache, warm by now, makes that quick).
  { cmake -S . -B "$workdir/build-after" -DCMAKE_BUILD_TYPE=Release -DCOLL_WERROR=ON &&
    cmake --build "$workdir/build-after" --parallel "$(nproc)"; } >"$logs/build-after.log" 2>&1
  after=$(ctest --test-dir "$workdir/build-after" -N | sed -n 's/^Total Tests: //p')
  if [ -n "$registered" ] && [ "$registered" = "$after" ]; then
    record "tests registered: quickstart's folder" PASS "$registered, as many as a folder configured afterwards"
  else
    record "tests registered: quickstart's folder" FAIL "${registered:-?} against ${after:-?} configured afterwards"
  fi
  torch2=$(ctest --test-dir build -N -R '^python\.torch2\.' | sed -n 's/^Total Tests: //p')
  if [ -x "${COLL_PYENV:-/opt/collective-py}/bin/python" ] && [ "${torch2:-0}" -eq 0 ]; then
    record "torch 2.x tests registered" FAIL "the environment exists, but no python.torch2.* test"
  else
    record "torch 2.x tests registered" PASS "${torch2:-0} python.torch2.* tests"
  fi
fi

collrun=build/tools/collrun/collrun
perf=build/benchmarks/perf/all_reduce_perf
if nvidia-smi -L >/dev/null 2>&1; then
  record "-m device without a GPU" PASS "not applicable: this machine has a GPU"
else
  printed=0
  for ((i = 0; i < runs; i++)); do
    out=$("$collrun" -n 2 "$perf" -m device -b 8 -e 8 -n 1 -w 0 2>&1)
    grep -q -- "-m device: no CUDA device: " <<<"$out" && printed=$((printed + 1))
  done
  [ $printed -eq "$runs" ] && verdict=PASS || verdict=FAIL
  record "-m device without a GPU: reason printed" $verdict "$printed of $runs runs"
fi

out=$(COLL_ALGO=bruck "$collrun" -n 2 "$perf" -b 8 -e 64K -f 64 -c 1 -m host 2>&1)
if grep -q "Out of bounds values : 0 OK" <<<"$out"; then
  record "COLL_ALGO=bruck with all_reduce_perf" PASS "applies to all-gather only; the all-reduce runs"
else
  record "COLL_ALGO=bruck with all_reduce_perf" FAIL "$(tail -2 <<<"$out" | tr '\n' ' ')"
fi
out=$(COLL_ALGO=",,," "$collrun" -n 2 "$perf" -b 8 -e 8 -m host 2>&1)
if grep -q 'COLL_ALGO=",,,"' <<<"$out"; then
  record "COLL_ALGO=\",,,\" refused" PASS "$(grep -m1 -o 'COLL_ALGO=",,,": [^;]*' <<<"$out")"
else
  record "COLL_ALGO=\",,,\" refused" FAIL "$(tail -2 <<<"$out" | tr '\n' ' ')"
fi

lock=$workdir/install.lock
( flock 9; sleep 3 ) 9>"$lock" &
holder=$!
sleep 0.5
out=$(COLL_INSTALL_LOCK=$lock tools/install-deps.sh --build-only 2>&1)
status=$?
wait $holder
if [ $status -eq 0 ] && grep -q "waiting for it to finish" <<<"$out"; then
  record "install-deps.sh twice at once" PASS "the second waited for the lock, then exit 0"
else
  record "install-deps.sh twice at once" FAIL "exit $status: $(tr '\n' ' ' <<<"$out")"
fi

echo
echo "== first hour, $(date -u '+%Y-%m-%d %H:%M UTC') on $(hostname) ($(nproc) CPUs) =="
printf '%s\n' "${results[@]}"
[ $failures -eq 0 ] || { echo "first_hour: $failures check(s) failed"; exit 1; }
echo "first_hour: every check passed"
