#!/usr/bin/env bash
# Several hosts on one machine: each host is a network namespace with its own eth0, joined by a
# veth pair (2 hosts) or a bridge in a "switch" namespace (3 or more). Ranks in different
# namespaces are different hosts to libcollective (their loopback cannot reach each other), so
# they talk over the socket transport exactly as across real machines.
#
# usage: netns_cluster.sh MODE HOSTS RANKS_PER_HOST BUILD_DIR
#   cases     collrun on every host (--nnodes/--node-rank/--master-addr/--master-port) runs
#             multihost_rank cases: every collective, split communicators; all must pass.
#   linkdown  ranks all-reduce in a loop; host 1's link is taken down mid-collective; every rank
#             must report an error within the timeout (COLL_TIMEOUT_MS=4000), none may hang. With
#             COLLTEST_EXPECT_ERROR set, some rank's error must also contain that text (the verbs
#             suite: the link's own failure, not only the call's timeout).
#   killhost  as linkdown, but the last host's ranks are SIGKILLed; the survivors must report an
#             error well within the timeout (COLL_TIMEOUT_MS=20000).
#   loopback  every rank is told COLL_SOCKET_IFNAME=lo: init must refuse on every rank (loopback
#             cannot reach other hosts) with collInvalidUsage naming loopback, not hang.
#   onehost   a job on host 0 alone, started as torchrun, mpirun and srun start one on one node
#             (LOCAL_WORLD_SIZE=WORLD_SIZE), with MASTER_ADDR host 0's network address and no
#             COLL_STORE_SECRET; a stranger on host 1, and one on host 0, present the all-zero key
#             to the store: both must be refused while the job runs.
#   run       collrun on every host runs the command after "--" (e.g. all_reduce_perf); prints
#             host 0's output, and the others' only if they fail. For benchmarks.
#   iperf     iperf3 from host 0 to host 1 (-t 3), its summary lines. For benchmarks.
# Exits 77 (ctest: skipped) with a message when namespaces cannot be made here.
set -u

mode=${1:?mode}
hosts=${2:?hosts}
per=${3:?ranks per host}
build=${4:?build dir}
shift 4
[ "${1:-}" = "--" ] && shift
command_args=("$@")
collrun=$build/tools/collrun/collrun
prog=$build/tests/multihost/multihost_rank
tag=$(printf '%04x' $(( ($$ + RANDOM) % 65536 )))
switch=cs$tag
workdir=$(mktemp -d)
nranks=$((hosts * per))
port=29411

ns() { echo "ch${tag}h$1"; }
addr() { echo "10.99.0.$(($1 + 1))"; }

cleanup() {
  for ((k = 0; k < hosts; k++)); do
    ip netns pids "$(ns $k)" 2>/dev/null | xargs -r kill -9 2>/dev/null
    ip netns del "$(ns $k)" 2>/dev/null
  done
  ip netns del "$switch" 2>/dev/null
  rm -rf "$workdir"
}
trap cleanup EXIT

skip() {
  echo "SKIPPED: $*"
  exit 77
}

[ "$(id -u)" -eq 0 ] || skip "network namespaces need root (this test runs as uid $(id -u))"
command -v ip >/dev/null || skip "the ip command (iproute2) is missing"
ip netns add "$(ns 0)" 2>"$workdir/err" || skip "cannot create a network namespace: $(cat "$workdir/err")"

build_hosts() {
  for ((k = 1; k < hosts; k++)); do ip netns add "$(ns $k)" || return 1; done
  if [ "$hosts" -eq 2 ]; then
    ip -n "$(ns 0)" link add eth0 type veth peer name eth0 netns "$(ns 1)" || return 1
  else
    ip netns add "$switch" || return 1
    ip -n "$switch" link add br0 type bridge || return 1
    ip -n "$switch" link set br0 up || return 1
    for ((k = 0; k < hosts; k++)); do
      ip -n "$(ns $k)" link add eth0 type veth peer name p$k netns "$switch" || return 1
      ip -n "$switch" link set p$k master br0 up || return 1
    done
  fi
  for ((k = 0; k < hosts; k++)); do
    ip -n "$(ns $k)" addr add "$(addr $k)/24" dev eth0 || return 1
    ip -n "$(ns $k)" link set eth0 up || return 1
    ip -n "$(ns $k)" link set lo up || return 1
  done
}
build_hosts || skip "cannot wire the namespaces together (veth/bridge unsupported?)"
echo "netns_cluster: $hosts hosts x $per ranks ($(for ((k = 0; k < hosts; k++)); do printf '%s=%s ' "$(ns $k)" "$(addr $k)"; done))"

export COLL_STORE_SECRET=netns-cluster-$tag
# The "hosts" share this machine's cores: each host's collrun would pin its local rank 0 to the
# same first core (--bind auto), so collrun runs with --bind none here.

# Starts every rank directly (no collrun), so that each rank's exit status and output are its own.
start_ranks_directly() {
  local timeout_ms=$1 extra_env=${2:-COLL_UNUSED=1}
  pids=()
  for ((k = 0; k < hosts; k++)); do
    for ((l = 0; l < per; l++)); do
      local r=$((k * per + l))
      ip netns exec "$(ns $k)" env RANK=$r WORLD_SIZE=$nranks LOCAL_RANK=$l LOCAL_WORLD_SIZE=$per NODE_RANK=$k \
        MASTER_ADDR="$(addr 0)" MASTER_PORT=$port COLL_TIMEOUT_MS="$timeout_ms" "$extra_env" \
        timeout -s KILL 120 "$prog" loop >"$workdir/rank$r.log" 2>&1 &
      pids[$r]=$!
    done
  done
}

wait_until_ready() {
  for ((i = 0; i < 600; i++)); do
    [ "$(cat "$workdir"/rank*.log 2>/dev/null | grep -c READY)" -eq "$nranks" ] && return 0
    sleep 0.1
  done
  echo "FAIL: the ranks did not all complete a first all-reduce within 60 s"
  cat "$workdir"/rank*.log
  return 1
}

# Waits for the given ranks; each must exit 3 after printing FAILED. Prints how long they took.
expect_errors_within() {
  local limit_s=$1 start=$2
  shift 2
  local status=0
  for r in "$@"; do
    wait "${pids[$r]}"
    local rc=$? elapsed
    elapsed=$(($(date +%s%N) / 1000000 - start))
    local line
    line=$(grep -m1 FAILED "$workdir/rank$r.log")
    echo "  rank $r: exit $rc, ${elapsed} ms after the fault: ${line:-no error printed}"
    if [ "$rc" -ne 3 ] || [ -z "$line" ]; then
      echo "FAIL: rank $r did not report an error (exit $rc)"
      status=1
    elif [ "$elapsed" -gt $((limit_s * 1000)) ]; then
      echo "FAIL: rank $r took ${elapsed} ms, more than ${limit_s} s"
      status=1
    fi
  done
  return $status
}

case "$mode" in
  cases)
    [ -x "$collrun" ] && [ -x "$prog" ] || { echo "FAIL: $collrun or $prog missing"; exit 1; }
    pids=()
    for ((k = 0; k < hosts; k++)); do
      ip netns exec "$(ns $k)" env COLL_TIMEOUT_MS=60000 "$collrun" --bind none -n "$per" --nnodes "$hosts" --node-rank "$k" \
        --master-addr "$(addr 0)" --master-port $port --timeout 280 --tag-output "$prog" cases \
        >"$workdir/host$k.log" 2>&1 &
      pids[$k]=$!
    done
    status=0
    for ((k = 0; k < hosts; k++)); do
      wait "${pids[$k]}" || status=1
      sed "s/^/host$k: /" "$workdir/host$k.log"
    done
    [ "$status" -eq 0 ] && echo "PASS: $nranks ranks on $hosts hosts" || echo "FAIL: some host's ranks failed"
    exit $status
    ;;
  linkdown)
    start_ranks_directly 4000
    wait_until_ready || exit 1
    sleep 0.3
    start=$(($(date +%s%N) / 1000000))
    ip -n "$(ns 1)" link set eth0 down
    echo "netns_cluster: took host 1's eth0 down; every rank must fail within the 4 s timeout (+4 s slack)"
    expect_errors_within 8 "$start" $(seq 0 $((nranks - 1))) || exit 1
    if [ -n "${COLLTEST_EXPECT_ERROR:-}" ] && ! grep -h FAILED "$workdir"/rank*.log | grep -qF "$COLLTEST_EXPECT_ERROR"; then
      echo "FAIL: no rank's error says \"$COLLTEST_EXPECT_ERROR\""
      exit 1
    fi
    echo "PASS: every rank reported the lost link"
    ;;
  killhost)
    start_ranks_directly 20000
    wait_until_ready || exit 1
    sleep 0.3
    victim=$((hosts - 1))
    start=$(($(date +%s%N) / 1000000))
    ip netns pids "$(ns $victim)" | xargs -r kill -9
    echo "netns_cluster: killed host $victim's ranks; the survivors must fail well within the 20 s timeout"
    expect_errors_within 10 "$start" $(seq 0 $((victim * per - 1))) || exit 1
    echo "PASS: every surviving rank reported the dead host"
    ;;
  loopback)
    start_ranks_directly 20000 COLL_SOCKET_IFNAME=lo
    status=0
    rank0_refused=0
    for ((r = 0; r < nranks; r++)); do
      wait "${pids[$r]}"
      rc=$?
      line=$(grep -m1 "loopback" "$workdir/rank$r.log")
      # Rank 0 hosts the store: once it has refused and exited, a rank still reading the peers'
      # records (under load) learns of it as the store closing, not by refusing itself.
      if [ -z "$line" ] && [ "$r" -gt 0 ] && [ "$rank0_refused" = 1 ]; then
        line=$(grep -m1 "rendezvous store .* closed the connection" "$workdir/rank$r.log")
      fi
      echo "  rank $r: exit $rc: ${line:-$(tail -1 "$workdir/rank$r.log")}"
      if [ "$rc" -ne 1 ] || [ -z "$line" ]; then
        echo "FAIL: rank $r was not refused for loopback"
        status=1
      fi
      [ "$r" -eq 0 ] && [ -n "$line" ] && rank0_refused=1
    done
    [ "$status" -eq 0 ] && echo "PASS: every rank refused loopback across hosts"
    exit $status
    ;;
  onehost)
    nranks=$per
    pids=()
    for ((r = 0; r < per; r++)); do
      ip netns exec "$(ns 0)" env -u COLL_STORE_SECRET RANK=$r WORLD_SIZE=$per LOCAL_RANK=$r LOCAL_WORLD_SIZE=$per \
        MASTER_ADDR="$(addr 0)" MASTER_PORT=$port COLL_TIMEOUT_MS=20000 TMPDIR="$workdir" \
        timeout -s KILL 120 "$prog" loop >"$workdir/rank$r.log" 2>&1 &
      pids[$r]=$!
    done
    wait_until_ready || exit 1
    status=0
    for k in 1 0; do
      line=$(ip netns exec "$(ns $k)" "$prog" probe "$(addr 0)" $port)
      rc=$?
      echo "  a stranger on host $k with the all-zero key: $line"
      [ "$rc" -eq 0 ] && [[ "$line" == "PROBE REFUSED"* ]] || status=1
      line=$(ip netns exec "$(ns $k)" "$prog" probe 127.0.0.1 $port)
      echo "  the same at 127.0.0.1 on host $k: $line"
      [[ "$line" == "PROBE JOINED"* ]] && status=1
    done
    for r in "${pids[@]}"; do kill -9 "$r" 2>/dev/null; wait "$r" 2>/dev/null; done
    [ "$status" -eq 0 ] && echo "PASS: the one-host job's store refused every stranger" || echo "FAIL: a stranger joined the one-host job's store"
    exit $status
    ;;
  run)
    pids=()
    for ((k = 0; k < hosts; k++)); do
      ip netns exec "$(ns $k)" "$collrun" --bind none -n "$per" --nnodes "$hosts" --node-rank "$k" --master-addr "$(addr 0)" \
        --master-port $port --timeout 280 "${command_args[@]}" >"$workdir/host$k.log" 2>&1 &
      pids[$k]=$!
    done
    status=0
    for ((k = 0; k < hosts; k++)); do
      if ! wait "${pids[$k]}"; then
        status=1
        sed "s/^/host$k: /" "$workdir/host$k.log"
      fi
    done
    cat "$workdir/host0.log"
    exit $status
    ;;
  iperf)
    command -v iperf3 >/dev/null || { echo "iperf3 missing (tools/install-deps.sh --compare installs it)"; exit 1; }
    ip netns exec "$(ns 1)" iperf3 -s -1 -D -B "$(addr 1)" >/dev/null 2>&1
    sleep 0.5
    ip netns exec "$(ns 0)" iperf3 -c "$(addr 1)" -t 3 -f g | grep -E "sender|receiver"
    ;;
  *)
    echo "unknown mode $mode"
    exit 2
    ;;
esac
