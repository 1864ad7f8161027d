#!/usr/bin/env bash
# colltopo's output: the text view names what the kernel reports, --json is valid JSON (checked
# with Python's json.tool) with the same counts, --help works and bad flags are refused.
# usage: colltopo_test.sh PATH_TO_COLLTOPO
set -euo pipefail

[[ $# -eq 1 ]] || { echo "usage: $0 PATH_TO_COLLTOPO" >&2; exit 2; }
T=$1
# shellcheck source-path=SCRIPTDIR source=launch_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/launch_lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

online=$(getconf _NPROCESSORS_ONLN)

"$T" >"$tmp/text"
cat "$tmp/text"
check "text: PU count" "$online PU" "$(grep -o "[0-9]* PUs*" "$tmp/text" | head -1 | sed 's/PUs/PU/')"
check "text: a NUMA node line" 1 "$(grep -c -m1 '^NUMA node [0-9]*: cpus' "$tmp/text")"
check "text: GPUs and NICs sections" 2 "$(grep -c -E '^(GPUs|NICs)' "$tmp/text")"
check "text: the binding" "$(grep Cpus_allowed_list /proc/self/status | cut -f2)" \
  "$(sed -n 's/^binding of this process (pid [0-9]*): cpus //p' "$tmp/text")"
if [[ -e /sys/class/net/lo ]]; then
  check "text: loopback is virtual" 1 "$(grep -c -E '^  lo +up +virtual, loopback' "$tmp/text")"
fi

"$T" --json >"$tmp/json"
if [[ -x /usr/bin/python3 ]]; then
  check "--json is valid JSON" 0 "$(/usr/bin/python3 -m json.tool "$tmp/json" >/dev/null 2>"$tmp/json.err"; echo $?)"
  [[ -s $tmp/json.err ]] && cat "$tmp/json.err"
  summary=$(/usr/bin/python3 - "$tmp/json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
pus = sorted(p for c in t["cores"] for p in c["pus"])
nics = [d["bus_id"] for d in t["pci_devices"] if d["kind"] == "NIC"]
print(t["counts"]["pus"], len(pus), len(set(pus)), t["counts"]["nics"] == len(nics),
      all(isinstance(i["virtual"], bool) for i in t["interfaces"]), len(t["binding"]["cpus"]) > 0)
PY
)
  check "--json: counts agree" "$online $online $online True True True" "$summary"
else
  echo "skip JSON validation: /usr/bin/python3 is absent"
fi
check "--source sysfs works" 0 "$("$T" --source sysfs >/dev/null; echo $?)"

check "--help exits 0" 0 "$("$T" --help >"$tmp/help"; echo $?)"
check "--help shows usage" 1 "$(grep -c '^usage: colltopo' "$tmp/help")"
status=0
"$T" --bogus >/dev/null 2>"$tmp/err" || status=$?
check "unknown flag exits 2" 2 "$status"
check "unknown flag is named" 1 "$(grep -c "unknown argument '--bogus'" "$tmp/err")"
status=0
"$T" --source magic >/dev/null 2>"$tmp/err" || status=$?
check "bad --source exits 2" 2 "$status"
check "bad --source names flag, value and choices" 1 \
  "$(grep -c "invalid value 'magic' for --source: expected auto, hwloc or sysfs" "$tmp/err")"

finish colltopo_test
