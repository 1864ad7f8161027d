#!/usr/bin/env bash
# all_reduce_perf under the environment srun gives its tasks, without Slurm: the processes are
# started here with only SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_NODEID,
# SLURM_TASKS_PER_NODE, SLURM_LAUNCH_NODE_IPADDR (and MASTER_PORT) set, as srun sets them.
# usage: slurm_test.sh PATH_TO_ALL_REDUCE_PERF
set -euo pipefail
[[ $# -eq 1 ]] || { echo "usage: $0 PATH_TO_ALL_REDUCE_PERF" >&2; exit 2; }
perf=$1
# shellcheck source-path=SCRIPTDIR source=launch_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/launch_lib.sh"

tmp=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT

# run_tasks NAME NTASKS TASKS_PER_NODE [VAR=VALUE...]: starts the tasks as srun would place them
# (node = task / tasks per node), waits for all, checks every status and rank 0's table.
run_tasks() {
  local name=$1 ntasks=$2 per_node=$3
  shift 3
  local port
  port=$(free_port)
  pids=()
  for ((task = 0; task < ntasks; task++)); do
    env SLURM_PROCID=$task SLURM_NTASKS="$ntasks" SLURM_LOCALID=$((task % per_node)) \
      SLURM_NODEID=$((task / per_node)) SLURM_TASKS_PER_NODE="$per_node(x$(((ntasks + per_node - 1) / per_node)))" \
      SLURM_LAUNCH_NODE_IPADDR=127.0.0.1 MASTER_PORT="$port" COLL_DEBUG=INFO COLL_DEBUG_SUBSYS=BOOTSTRAP "$@" \
      timeout 180 "$perf" -b 8 -e 64K -f 8 -c 1 >"$tmp/$name.$task" 2>&1 &
    pids+=($!)
  done
  local statuses="" status
  for pid in "${pids[@]}"; do
    status=0
    wait "$pid" || status=$?
    statuses+="$status "
  done
  pids=()
  cat "$tmp/$name.0"
  check "$name: every task exits 0" "$(printf '0 %.0s' $(seq "$ntasks"))" "$statuses"
  check_perf_log "$name" "$tmp/$name.0" "$ntasks"
  local last=$((ntasks - 1))
  check "$name: task $last reads the Slurm variables" 1 \
    "$(grep -c "launch environment (slurm): rank $last of $ntasks, local $((last % per_node)) of $per_node, store 127.0.0.1:$port" \
      "$tmp/$name.$last")"
}

# One node, two tasks; MASTER_ADDR unset, so the store is SLURM_LAUNCH_NODE_IPADDR.
run_tasks one_node 2 2
# srun -N 2 --ntasks-per-node 2 (both "nodes" are this host), MASTER_ADDR exported as the docs say.
run_tasks two_nodes 4 2 MASTER_ADDR=127.0.0.1
finish slurm_test
