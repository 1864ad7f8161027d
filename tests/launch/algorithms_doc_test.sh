#!/usr/bin/env bash
# docs/algorithms.md holds the algorithm table as colltopo --algorithms prints it (the table is
# read from the code, so the docs cannot drift from it unnoticed): the block between the
# algorithm-table markers must equal that output.
# usage: algorithms_doc_test.sh PATH_TO_COLLTOPO PATH_TO_ALGORITHMS_MD
set -euo pipefail
[[ $# -eq 2 ]] || { echo "usage: $0 PATH_TO_COLLTOPO PATH_TO_ALGORITHMS_MD" >&2; exit 2; }
expected=$("$1" --algorithms)
documented=$(sed -n '/^<!-- algorithm-table/,/^<!-- \/algorithm-table -->/p' "$2" | sed '1d;$d')
if [[ "$expected" == "$documented" ]]; then
  echo "PASS: $2 holds the algorithm table as colltopo --algorithms prints it"
  exit 0
fi
echo "FAIL: the algorithm table in $2 differs from colltopo --algorithms; replace the block with its output:"
diff <(echo "$documented") <(echo "$expected") || true
exit 1
