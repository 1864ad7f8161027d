#!/usr/bin/env python3
"""Instructions per call of our small collectives, counted by valgrind (callgrind) on each rank,
with the functions they go to.

A small call on one host costs a few hundred nanoseconds, and this machine's timings of such calls
move by 2x from one second to the next (docs/performance.md, "Cross-core variability"). The
instructions a call executes move much less: where the ranks do not wait for each other's cache
lines, they are what a call costs, so a change to the call path can be weighed with them before
it is timed. Each program runs twice, with ITERS_A and ITERS_B timed iterations, and the
difference of the two counts over the difference of the call counts is the cost of one call,
free of init and teardown.

A rank that waits for another counts the loads of its polling loop too (ProgressWaiter::idle and
the loop that called it), and how long it polls depends on the machine's load: the side that does
not wait (a broadcast's or scatter's root, a gather's or reduce's leaves) gives the steadier
figure; run it on a quiet machine. Open MPI is not counted: its progress loop both polls and
receives, so its waiting cannot be told from its work.

examples:
  benchmarks/compare/call_instructions.py                      # every collective, 2 ranks, 8 B
  benchmarks/compare/call_instructions.py --colls scatter,reduce --ranks 4 --size 64 --top 20
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from collectives import COLLECTIVES, REDUCING  # noqa: E402

OUT_OF_PLACE_ONLY = ("sendrecv", "alltoall", "alltoallv")  # benchmarks/perf: no in-place loop


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--colls", default=",".join(COLLECTIVES), help="collectives, comma-separated (default: all twelve)")
    p.add_argument("--ranks", type=int, default=2, help="ranks (default 2)")
    p.add_argument("--size", type=int, default=8, help="bytes per call, as for the perf programs (default 8)")
    p.add_argument("--iters", default="1000,3000", help="the two iteration counts ITERS_A,ITERS_B (default 1000,3000)")
    p.add_argument("--top", type=int, default=0, help="also list each rank's N costliest functions per call")
    p.add_argument("--build-dir", default=os.path.join(ROOT, "build"), help="our build (default build/)")
    p.add_argument("--out", help="also write the table to this file (markdown)")
    p.add_argument("--timeout", type=int, default=600, help="seconds per run (default 600)")
    return p.parse_args()


def function_costs(path):
    """{function: instructions} from callgrind_annotate's listing of one output file."""
    out = subprocess.run(["callgrind_annotate", "--threshold=100", path], capture_output=True, text=True,
                         check=True).stdout
    costs = {}
    for line in out.splitlines():
        m = re.match(r"\s*([\d,]+) \([^)]*\)\s+(.*)", line)
        if m and "PROGRAM TOTALS" not in line:
            name = re.sub(r"\s*\[.*\]$", "", m.group(2))
            name = re.sub(r"^\?\?\?:", "", name)
            costs[name] = costs.get(name, 0) + int(m.group(1).replace(",", ""))
    return costs


def run_counted(a, coll, iters, work):
    """{rank: {function: instructions}} for one run of coll's perf program with `iters` iterations."""
    perf = os.path.join(a.build_dir, "benchmarks", "perf", f"{coll}_perf")
    collrun = os.path.join(a.build_dir, "tools", "collrun", "collrun")
    out = os.path.join(work, f"{coll}.{iters}.rank%q{{RANK}}.%p")
    cmd = [collrun, "-n", str(a.ranks), "--timeout", str(a.timeout), "valgrind", "--tool=callgrind",
           f"--callgrind-out-file={out}", perf, "-b", str(a.size), "-e", str(a.size), "-n", str(iters),
           "-w", "10", "-c", "0", "-d", "float"] + (["-o", "sum"] if coll in REDUCING else [])
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout + 30)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited with {p.returncode}:\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    found = {}
    for path in glob.glob(os.path.join(work, f"{coll}.{iters}.rank*")):
        m = re.search(r"rank(\d+)\.\d+$", path)
        if m:
            found[int(m.group(1))] = function_costs(path)
    if sorted(found) != list(range(a.ranks)):
        raise RuntimeError(f"expected a callgrind file per rank of {coll}, found ranks {sorted(found)}")
    return found


def main():
    a = parse_args()
    for tool in ("valgrind", "callgrind_annotate"):
        if shutil.which(tool) is None:
            sys.exit(f"call_instructions: {tool} not found (tools/install-deps.sh installs valgrind)")
    iters_a, iters_b = (int(x) for x in a.iters.split(","))
    if iters_b <= iters_a:
        sys.exit(f"call_instructions: --iters {a.iters}: expected ITERS_A < ITERS_B")
    colls = [c for c in a.colls.split(",") if c]
    for c in colls:
        if c not in COLLECTIVES:
            sys.exit(f"call_instructions: unknown collective {c!r}: expected one of {', '.join(COLLECTIVES)}")
    work = tempfile.mkdtemp(prefix="call_instructions.")
    rank_cols = " | ".join(f"rank {r}" for r in range(a.ranks))
    table = [f"Instructions per call, {a.ranks} ranks, {a.size} B float32, root 0 (callgrind; iterations {iters_a} "
             f"and {iters_b}):", "", f"| collective | {rank_cols} |",
             "| --- | " + " | ".join("---:" for _ in range(a.ranks)) + " |"]
    details = []
    try:
        for coll in colls:
            print(f"call_instructions: {coll} ...", file=sys.stderr, flush=True)
            before, after = run_counted(a, coll, iters_a, work), run_counted(a, coll, iters_b, work)
            # The perf programs time an out-of-place and an in-place loop, but one where the API
            # defines no in-place form (their in-place columns print N/A).
            calls = (iters_b - iters_a) * (1 if coll in OUT_OF_PLACE_ONLY else 2)
            totals = []
            for r in range(a.ranks):
                names = set(before[r]) | set(after[r])
                per = {f: (after[r].get(f, 0) - before[r].get(f, 0)) / calls for f in names}
                totals.append(sum(per.values()))
                if a.top > 0:
                    details.append(f"\n{coll}, rank {r}: {totals[-1]:.0f} per call")
                    for f, v in sorted(per.items(), key=lambda kv: -kv[1])[:a.top]:
                        details.append(f"  {v:8.1f}  {f[:140]}")
            table.append(f"| {coll} | " + " | ".join(f"{t:.0f}" for t in totals) + " |")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text = "\n".join(table + details)
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
