#!/usr/bin/env bash
# collrun's multi-node form, both "nodes" on this host: two collruns with --nnodes 2, their
# --node-rank, and the same --master-addr/--master-port run one 4-rank all_reduce_perf.
# usage: collrun_nodes_test.sh PATH_TO_COLLRUN PATH_TO_ALL_REDUCE_PERF
set -euo pipefail
[[ $# -eq 2 ]] || { echo "usage: $0 PATH_TO_COLLRUN PATH_TO_ALL_REDUCE_PERF" >&2; exit 2; }
collrun=$1 perf=$2
# shellcheck source-path=SCRIPTDIR source=launch_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/launch_lib.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
port=$(free_port)
# Without collrun's per-job secret (it only makes one on a single node) both nodes share this one.
export COLL_STORE_SECRET=collrun-nodes-test-$$
pids=()
for node in 0 1; do
  "$collrun" -n 2 --nnodes 2 --node-rank $node --master-addr 127.0.0.1 --master-port "$port" --timeout 180 \
    "$perf" -b 8 -e 64K -f 8 -c 1 >"$tmp/node$node" 2>&1 &
  pids+=($!)
done
statuses=""
for pid in "${pids[@]}"; do
  status=0
  wait "$pid" || status=$?
  statuses+="$status "
done
cat "$tmp/node0"
check "both collruns exit 0" "0 0 " "$statuses"
check_perf_log "collrun --nnodes 2 -n 2" "$tmp/node0" 4
finish collrun_nodes_test
