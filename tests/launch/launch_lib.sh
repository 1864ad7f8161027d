# shellcheck shell=bash
# Shared by the launch tests (sourced): a free port, a clean launcher environment, and the check
# that an all_reduce_perf log reports correct results.

# Variables of other launchers (or of a collrun/mpirun/srun this test itself runs under) that
# collCommInitFromEnv would read before the ones a test sets.
launch_vars=(RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE NODE_RANK GROUP_RANK MASTER_ADDR MASTER_PORT
  COLL_BOOTSTRAP COLL_STORE_SECRET OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE OMPI_COMM_WORLD_LOCAL_RANK
  OMPI_COMM_WORLD_LOCAL_SIZE PMI_RANK PMI_SIZE SLURM_PROCID SLURM_NTASKS SLURM_LOCALID SLURM_NODEID
  SLURM_TASKS_PER_NODE SLURM_LAUNCH_NODE_IPADDR)
for v in "${launch_vars[@]}"; do unset "$v"; done
unset v

failures=0

check() {  # check NAME EXPECTED ACTUAL
  if [[ $2 == "$3" ]]; then
    echo "ok   $1"
  else
    echo "FAIL $1: expected [$2], got [$3]"
    failures=$((failures + 1))
  fi
}

skip() {  # skip REASON: the tool a test needs is absent
  echo "SKIP: $1"
  exit 77
}

free_port() {
  if [[ -x /usr/bin/python3 ]]; then
    /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
  else
    echo $((20000 + RANDOM % 30000))
  fi
}

# check_perf_log NAME LOG NRANKS: the table of a -c 1 run has rows, and every #wrong is 0.
check_perf_log() {
  local name=$1 log=$2 nranks=$3
  check "$name: nRanks" "$nranks" "$(sed -n 's/^# nRanks \([0-9]*\) .*/\1/p' "$log")"
  check "$name: 0 wrong values" 1 "$(grep -c 'Out of bounds values : 0 OK' "$log")"
  # Data rows (a size first; log lines are mixed in): #wrong, out of place and in place, is
  # the 9th and 13th field.
  check "$name: result rows all correct" ok "$(awk '$1 ~ /^[0-9]+$/ && NF >= 13 { rows++; if ($9 != 0 || $13 != 0) bad++ }
    END { print (rows > 0 && bad == 0) ? "ok" : rows " rows, " bad + 0 " wrong" }' "$log")"
}

finish() {  # finish TEST_NAME
  if [[ $failures -ne 0 ]]; then
    echo "$1: $failures check(s) failed"
    exit 1
  fi
  echo "$1: all checks passed"
}
