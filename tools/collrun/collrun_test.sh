#!/usr/bin/env bash
# shellcheck disable=SC2016  # the ranks' shell snippets are single-quoted on purpose
# Behaviour tests of collrun (run by ctest, or by hand: tools/collrun/collrun_test.sh build/tools/collrun/collrun).
# Every check prints one line; the script exits 1 when any failed.
set -euo pipefail

if [ $# -ne 1 ] || [ "$1" = -h ] || [ "$1" = --help ]; then
  echo "usage: $0 PATH_TO_COLLRUN"
  [ $# -eq 1 ] && [ "$1" != -h ] && [ "$1" != --help ] && exit 2
  exit 0
fi
C=$1
failures=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

check() {  # check NAME EXPECTED ACTUAL
  if [ "$2" = "$3" ]; then
    echo "ok   $1"
  else
    echo "FAIL $1: expected [$2], got [$3]"
    failures=$((failures + 1))
  fi
}

words() {  # lines -> one space-separated line
  tr '\n' ' ' | sed 's/ $//'
}

status() {  # the exit status of a command, without tripping set -e
  local s=0
  "$@" >/dev/null 2>&1 || s=$?
  echo "$s"
}

# Environment of every rank.
out=$("$C" -n 3 sh -c 'echo "$RANK/$WORLD_SIZE/$LOCAL_RANK/$LOCAL_WORLD_SIZE/$NODE_RANK/$MASTER_ADDR/${#COLL_STORE_SECRET}"' | sort | words)
check "env, 3 ranks" "0/3/0/3/0/127.0.0.1/64 1/3/1/3/0/127.0.0.1/64 2/3/2/3/0/127.0.0.1/64" "$out"
ports=$("$C" -n 3 sh -c 'echo "$MASTER_PORT"' | sort -u | wc -l)
check "one MASTER_PORT for all ranks" 1 "$ports"
out=$(COLL_STORE_SECRET=s3 "$C" -n 2 --nnodes 2 --node-rank 1 --master-addr 10.1.2.3 --master-port 29555 \
  sh -c 'echo "$RANK/$WORLD_SIZE/$LOCAL_RANK/$NODE_RANK/$MASTER_ADDR/$MASTER_PORT/${COLL_STORE_SECRET:-none}"' | sort | words)
check "env, node 1 of 2" "2/4/0/1/10.1.2.3/29555/s3 3/4/1/1/10.1.2.3/29555/s3" "$out"
check "COLL_STORE_SECRET kept" "abc" "$(COLL_STORE_SECRET=abc "$C" -n 1 sh -c 'echo $COLL_STORE_SECRET')"
# OpenMP threads: collrun's CPUs shared out among the ranks, unless the user chose.
cpus=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)
share=$(( cpus / 3 > 0 ? cpus / 3 : 1 ))
check "OMP_NUM_THREADS: the CPUs shared out" "$share $share $share" \
  "$(env -u OMP_NUM_THREADS "$C" -n 3 sh -c 'echo "${OMP_NUM_THREADS:-unset}"' | words)"
check "OMP_NUM_THREADS: the user's kept" "5 5" "$(OMP_NUM_THREADS=5 "$C" -n 2 sh -c 'echo $OMP_NUM_THREADS' | words)"
check "OMP_NUM_THREADS: one rank left alone" "unset" \
  "$(env -u OMP_NUM_THREADS "$C" -n 1 sh -c 'echo "${OMP_NUM_THREADS:-unset}"')"

# The secret of a multi-node job: never none by accident.
node1=(--nnodes 2 --node-rank 1 --master-addr 10.1.2.3 --master-port 29555)
check "multi-node without a secret refused" 2 "$(env -u COLL_STORE_SECRET "$C" -n 1 "${node1[@]}" true 2>/dev/null; echo $?)"
msg=$(env -u COLL_STORE_SECRET "$C" -n 1 "${node1[@]}" true 2>&1 || true)
check "refusal says how" "collrun --new-secret" "$(echo "$msg" | grep -o 'collrun --new-secret' | head -1)"
check "explicit opt-out runs" "none" \
  "$(env -u COLL_STORE_SECRET COLL_STORE_ALLOW_NO_SECRET=1 "$C" -n 1 "${node1[@]}" sh -c 'echo ${COLL_STORE_SECRET:-none}')"
secret=$("$C" --new-secret)
check "--new-secret: 64 hex digits" 64 "$(echo -n "$secret" | tr -cd '0-9a-f' | wc -c)"
check "--new-secret: fresh each time" 1 "$([ "$secret" != "$("$C" --new-secret)" ] && echo 1 || echo 0)"
printf '  %s  \nsecond line\n' "$secret" >"$tmp/secret"
chmod 600 "$tmp/secret"
check "--secret-file: its first line, trimmed" "$secret" \
  "$(env -u COLL_STORE_SECRET "$C" -n 1 "${node1[@]}" --secret-file "$tmp/secret" sh -c 'echo $COLL_STORE_SECRET')"
check "--secret-file wins over the environment" "$secret" \
  "$(COLL_STORE_SECRET=other "$C" -n 1 --secret-file "$tmp/secret" sh -c 'echo $COLL_STORE_SECRET')"
chmod 644 "$tmp/secret"
msg=$("$C" -n 1 --secret-file "$tmp/secret" true 2>&1)
check "--secret-file readable by others: warned" "readable by others" "$(echo "$msg" | grep -o 'readable by others')"
check "--secret-file missing" 2 "$(status "$C" -n 1 --secret-file "$tmp/none" true)"
: >"$tmp/empty"
check "--secret-file empty" 2 "$(status "$C" -n 1 --secret-file "$tmp/empty" true)"

# Exit statuses.
check "all succeed" 0 "$(status "$C" -n 3 true)"
start=$(date +%s)
check "failing rank's status" 7 "$(status "$C" -n 3 sh -c 'if [ "$RANK" = 1 ]; then exit 7; fi; sleep 30')"
check "others stopped promptly" 1 "$(( $(date +%s) - start < 10 ))"
check "killed rank: 128+signal" 137 "$(status "$C" -n 2 sh -c 'if [ "$RANK" = 0 ]; then kill -9 $$; fi; sleep 30')"
msg=$("$C" -n 2 sh -c 'if [ "$RANK" = 1 ]; then exit 3; fi; sleep 30' 2>&1 >/dev/null || true)
check "failure message" "collrun: rank 1 (pid" "$(echo "$msg" | grep -o 'collrun: rank 1 (pid' | head -1)"
# The others' own last words after a failure: ranks that end by themselves within the grace period
# are not stopped, so what they print is kept (they were killed mid-sentence before), and collrun
# names the rank that failed first.
for i in 1 2 3; do
  out=$("$C" -n 3 sh -c 'if [ "$RANK" = 2 ]; then echo "rank 2 gives up" >&2; exit 3; fi
                         sleep 0.3; echo "rank $RANK says why" >&2; exit 4' 2>&1 || true)
  check "others' reasons kept ($i)" "2 1" "$(grep -c 'says why' <<<"$out") $(grep -c 'rank 2 failed first, with status 3' <<<"$out")"
done
check "--grace 0 stops at once" 1 "$(( $(status "$C" -n 2 --grace 0 sh -c 'if [ "$RANK" = 1 ]; then exit 5; fi; sleep 30') == 5 ))"
start=$(date +%s)
check "grace then stop" 6 "$(status "$C" -n 2 --grace 0.5 sh -c 'if [ "$RANK" = 1 ]; then exit 6; fi; sleep 30')"
check "grace is short" 1 "$(( $(date +%s) - start < 8 ))"
check "bad --grace" 2 "$(status "$C" -n 1 --grace -1 true)"
check "--timeout exits 124" 124 "$(status "$C" -n 2 --timeout 0.5 sleep 30)"
check "SIGTERM-proof ranks killed" 124 "$(status "$C" -n 1 --timeout 0.3 sh -c 'trap "" TERM; sleep 8; sleep 8')"

# Usage errors and unrunnable programs.
check "no -n" 2 "$(status "$C" true)"
check "bad -n" 2 "$(status "$C" -n 0 true)"
check "unknown flag" 2 "$(status "$C" -n 1 --bogus true)"
check "bad --bind" 2 "$(status "$C" -n 1 --bind socket true)"
check "--nnodes without --master-port" 2 "$(status "$C" -n 1 --nnodes 2 true)"
check "missing program" 127 "$(status "$C" -n 1 /nonexistent/program)"
check "--help" 0 "$(status "$C" --help)"
check "--version" 0 "$(status "$C" --version)"

# --tag-output.
out=$("$C" -n 2 --tag-output sh -c 'echo "out $RANK"; echo "err $RANK" >&2; printf "tail $RANK"' 2>"$tmp/err" | sort | words)
check "tagged stdout" "[0] out 0 [0] tail 0 [1] out 1 [1] tail 1" "$out"
check "tagged stderr" "[0] err 0 [1] err 1" "$(sort "$tmp/err" | words)"

# Binding: each rank reports the CPUs it may run on; collrun says on stderr what it chose and why.
ncpu=$(nproc)
cpus_of_rank='echo "$RANK $(grep Cpus_allowed_list /proc/self/status | cut -f2)"'
"$C" -n 2 --bind core sh -c "$cpus_of_rank" >"$tmp/bind" 2>"$tmp/bind.err"
check "--bind core gives ranks distinct CPUs" "$(( ncpu >= 2 ? 2 : 1 ))" "$(cut -d' ' -f2 "$tmp/bind" | sort -u | wc -l)"
check "--bind core: a binding line per rank" "0 1" \
  "$(sed -n 's/^collrun: rank \([0-9]*\) bound to cpus .*/\1/p' "$tmp/bind.err" | sort | words)"
# What collrun says it chose is what the rank got.
said=$(sed -n 's/^collrun: rank \([0-9]*\) bound to cpus \([0-9,-]*\) (.*/\1 \2/p' "$tmp/bind.err" | sort | words)
check "--bind core: the rank runs where collrun says" "$said" "$(sort "$tmp/bind" | words)"
whole_cores=0
while read -r _ cpus; do
  first=${cpus%%[,-]*}
  siblings=$(cat "/sys/devices/system/cpu/cpu$first/topology/thread_siblings_list" 2>/dev/null || echo "$first")
  [ "$cpus" = "$siblings" ] && whole_cores=$((whole_cores + 1))
done <"$tmp/bind"
check "--bind core: each rank gets one whole core" 2 "$whole_cores"
# numa: a rank gets a whole NUMA node (here: the node holding its CPUs, all of it).
"$C" -n 1 --bind numa sh -c "$cpus_of_rank" >"$tmp/numa" 2>"$tmp/numa.err"
got=$(cut -d' ' -f2 "$tmp/numa")
nodes_with_exact_list=0
for node in /sys/devices/system/node/node[0-9]*; do
  [ -r "$node/cpulist" ] && [ "$(cat "$node/cpulist")" = "$got" ] && nodes_with_exact_list=$((nodes_with_exact_list + 1))
done
if [ -d /sys/devices/system/node/node0 ] && [ "$(grep Cpus_allowed_list /proc/self/status | cut -f2)" = "$(cat /sys/devices/system/cpu/online)" ]; then
  check "--bind numa gives a whole NUMA node" 1 "$nodes_with_exact_list"
else
  echo "skip --bind numa gives a whole NUMA node (no NUMA information, or collrun's own affinity is restricted)"
fi
check "--bind numa: a binding line" 1 "$(grep -c '^collrun: rank 0 bound to cpus .* (numa' "$tmp/numa.err")"
# A NIC on PCI named by COLL_SOCKET_IFNAME is preferred when there is no GPU.
nic=""
for dev in /sys/class/net/*/device; do
  [ -e "$dev" ] || continue
  case "$(readlink -f "$dev")" in */[0-9a-f][0-9a-f][0-9a-f][0-9a-f]:*) nic=$(basename "$(dirname "$dev")"); break ;; esac
done
if [ -n "$nic" ] && [ ! -e /dev/nvidia0 ]; then
  COLL_SOCKET_IFNAME="=$nic" "$C" -n 2 --bind core true 2>"$tmp/nic.err"
  check "--bind core near COLL_SOCKET_IFNAME's NIC" 2 "$(grep -c "(core, near NIC $nic " "$tmp/nic.err")"
else
  echo "skip --bind near a NIC (no network interface on PCI, or a GPU takes precedence)"
fi
# The default (auto): each rank its share of the cores when they fit, silently; no pinning when
# they do not.
ncores=$(grep -c ^processor /proc/cpuinfo)
mine=$(grep Cpus_allowed_list /proc/self/status)
auto=$("$C" -n 1 sh -c 'grep Cpus_allowed_list /proc/self/status' 2>&1)
check "--bind auto leaves a lone rank every CPU, silently" "$mine" "$auto"
if [ "$ncores" -ge 2 ]; then
  pair=$("$C" -n 2 sh -c 'taskset -cp $$ | sed "s/.*: //"' 2>&1 | sort)
  check "--bind auto: 2 ranks, 2 lines" 2 "$(echo "$pair" | wc -l)"
  shares=$(echo "$pair" | while read -r list; do taskset -c "$list" nproc; done | sort -u)
  check "--bind auto: 2 ranks get half the CPUs each" "$((ncores / 2))" "$shares"
  check "--bind auto: 2 ranks share no CPU" 2 "$(echo "$pair" | sort -u | wc -l)"
fi
over=$("$C" -n $((ncores + 1)) sh -c 'grep Cpus_allowed_list /proc/self/status' 2>&1)
check "--bind auto leaves more ranks than cores unpinned" $((ncores + 1)) \
  "$(echo "$over" | grep -c "Cpus_allowed_list:")"
[ "$ncores" -gt 1 ] && check "--bind auto: unpinned ranks may use every CPU" 0 \
  "$(echo "$over" | grep -cE "^Cpus_allowed_list:[[:space:]]+[0-9]+$")"
msg=$("$C" -n 1 --bind socket true 2>&1 || true)
check "bad --bind names the flag and the choices" 1 \
  "$(echo "$msg" | grep -c "invalid value 'socket' for --bind: expected auto, none, core, cores or numa")"

# Signal forwarding: the ranks see SIGTERM (and run their handler) when collrun gets it.
"$C" -n 2 sh -c 'trap "echo got-term-$RANK; exit 0" TERM; while :; do sleep 0.05; done' >"$tmp/sig" 2>/dev/null &
pid=$!
sleep 1
kill -TERM "$pid"
wait "$pid" || true
check "SIGTERM forwarded to every rank" "got-term-0 got-term-1" "$(sort "$tmp/sig" | words)"

if [ "$failures" -ne 0 ]; then
  echo "collrun_test: $failures check(s) failed"
  exit 1
fi
echo "collrun_test: all checks passed"
