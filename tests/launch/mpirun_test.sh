#!/usr/bin/env bash
# all_reduce_perf on 2 ranks started by Open MPI's mpirun, which only passes MASTER_ADDR and
# MASTER_PORT (-x): collCommInitFromEnv must take rank and size from OMPI_COMM_WORLD_*.
# usage: mpirun_test.sh PATH_TO_ALL_REDUCE_PERF
set -euo pipefail
[[ $# -eq 1 ]] || { echo "usage: $0 PATH_TO_ALL_REDUCE_PERF" >&2; exit 2; }
perf=$1
# shellcheck source-path=SCRIPTDIR source=launch_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/launch_lib.sh"
command -v mpirun >/dev/null || skip "mpirun not found (Debian: apt-get install openmpi-bin)"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export MASTER_ADDR=127.0.0.1 MASTER_PORT
MASTER_PORT=$(free_port)
# COLL_DEBUG=INFO for BOOTSTRAP only: the ranks log which launcher's variables they read.
status=0
COLL_DEBUG=INFO COLL_DEBUG_SUBSYS=BOOTSTRAP timeout 180 \
  mpirun --allow-run-as-root --oversubscribe -n 2 -x MASTER_ADDR -x MASTER_PORT -x COLL_DEBUG -x COLL_DEBUG_SUBSYS \
  "$perf" -b 8 -e 64K -f 8 -c 1 >"$tmp/log" 2>&1 || status=$?
cat "$tmp/log"
check "mpirun exit status" 0 "$status"
check_perf_log "mpirun -n 2" "$tmp/log" 2
check "ranks read the Open MPI variables" 2 "$(grep -c 'launch environment (mpi): rank [01] of 2, local [01] of 2' "$tmp/log")"
finish mpirun_test
