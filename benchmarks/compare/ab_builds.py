#!/usr/bin/env python3
"""Is a change faster or slower? Runs the nccl-tests-style perf programs of two builds of
libcollective (A: before, B: after) side by side on this host, interleaved round by round so that
a noisy neighbour hurts both alike, and reports per program, rank count and size the median time
of each and the ratio A/B (above 1: B is faster).

Both builds run under the same collrun (B's), the same binding (collrun's default) and the same
flags; only the library and programs differ. Results are checked (-c 1) in the first round.

Writes results.md and results.json into --out (default: the folder ab in B's build directory).

examples:
  benchmarks/compare/ab_builds.py --a /tmp/before/build --b build
  benchmarks/compare/ab_builds.py --a /tmp/before/build --b build --programs all_reduce,broadcast \\
      --ranks 2,4 --sizes 64,64K,1M,16M --rounds 7
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

from compare import parse_bytes  # beside this script: the suite's one size grammar

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PROGRAMS = ("all_reduce", "all_gather", "broadcast", "reduce", "reduce_scatter", "gather", "scatter", "alltoall",
            "sendrecv")
# Also accepted, left out of the default: the variable-count programs (rank r holds r+1 shares).
VARIABLE_PROGRAMS = ("allgatherv", "reducescatterv", "alltoallv")
ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+\S+\s+\S+\s+-?\d+\s+([\d.]+)\s")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--a", required=True, help="build directory of the baseline (before)")
    p.add_argument("--b", required=True, help="build directory of the change (after)")
    p.add_argument("--programs", default=",".join(PROGRAMS),
                   help="perf programs without _perf (default: the nine fixed-count ones; allgatherv, "
                   "reducescatterv and alltoallv on request)")
    p.add_argument("--ranks", default="2,4", help="rank counts (default 2,4)")
    p.add_argument("--sizes", default="64,64K,1M,16M",
                   help="bytes per call as the perf programs count them (default 64,64K,1M,16M)")
    p.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    p.add_argument("--iters", type=int, default=50, help="timed iterations per size (default 50)")
    p.add_argument("--out", default=None, help="output directory (default B/ab)")
    p.add_argument("--timeout", type=int, default=300, help="seconds one program may take (default 300)")
    a = p.parse_args()
    a.programs = [x for x in a.programs.split(",") if x]
    unknown = [x for x in a.programs if x not in PROGRAMS + VARIABLE_PROGRAMS]
    if unknown:
        p.error(f"unknown program(s) {unknown}; expected some of {','.join(PROGRAMS + VARIABLE_PROGRAMS)}")
    a.ranks = [int(x) for x in a.ranks.split(",")]
    try:
        a.sizes = [parse_bytes(x) for x in a.sizes.split(",")]
    except (ValueError, argparse.ArgumentTypeError) as e:
        p.error(f"--sizes: {e}")
    for build in (a.a, a.b):
        if not os.path.isfile(os.path.join(build, "benchmarks", "perf", "all_reduce_perf")):
            p.error(f"{build} has no benchmarks/perf/all_reduce_perf: build it first (tools/quickstart.sh)")
    a.out = a.out or os.path.join(a.b, "ab")
    return a


def run_once(args, build, program, ranks, size, check):
    collrun = os.path.join(args.b, "tools", "collrun", "collrun")
    exe = os.path.join(build, "benchmarks", "perf", f"{program}_perf")
    cmd = [collrun, "-n", str(ranks), exe, "-b", str(size), "-e", str(size), "-n", str(args.iters), "-w", "5",
           "-c", "1" if check else "0", "-m", "host"]
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.path.join(build) + ":" + env.get("LD_LIBRARY_PATH", "")
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, env=env)
    if out.returncode != 0:
        sys.exit(f"ab_builds: {' '.join(cmd)} failed ({out.returncode}):\n{out.stdout}{out.stderr}")
    # The program rounds the size to whole elements per rank; a size that rounds to 0 is refused.
    for line in out.stdout.splitlines():
        m = ROW.match(line)
        if m:
            if int(m.group(1)) == 0:
                sys.exit(f"ab_builds: {size} bytes is less than one float per rank for {program} on {ranks} ranks: "
                         "choose larger --sizes")
            if check and "# Out of bounds values : 0" not in out.stdout:
                sys.exit(f"ab_builds: {' '.join(cmd)} reported wrong results:\n{out.stdout}")
            return float(m.group(3))
    sys.exit(f"ab_builds: no result row in:\n{out.stdout}")


def main():
    args = parse_args()
    os.makedirs(args.out, exist_ok=True)
    times = {}  # (program, ranks, size, which) -> [us]
    for r in range(args.rounds):
        order = ("a", "b") if r % 2 == 0 else ("b", "a")
        for program in args.programs:
            for ranks in args.ranks:
                for size in args.sizes:
                    for which in order:
                        build = args.a if which == "a" else args.b
                        us = run_once(args, build, program, ranks, size, check=r == 0)
                        times.setdefault((program, ranks, size, which), []).append(us)
        print(f"ab_builds: round {r + 1}/{args.rounds} done", flush=True)
    lines = ["| program | ranks | bytes | A median us | B median us | A/B |", "| --- | ---: | ---: | ---: | ---: | ---: |"]
    rows = []
    ratios = []
    for program in args.programs:
        for ranks in args.ranks:
            for size in args.sizes:
                a = statistics.median(times[(program, ranks, size, "a")])
                b = statistics.median(times[(program, ranks, size, "b")])
                ratio = a / b if b > 0 else float("nan")
                ratios.append(ratio)
                rows.append({"program": program, "ranks": ranks, "bytes": size, "a_us": a, "b_us": b, "a_over_b": ratio,
                             "a_runs": times[(program, ranks, size, "a")],
                             "b_runs": times[(program, ranks, size, "b")]})
                lines.append(f"| {program} | {ranks} | {size} | {a:.2f} | {b:.2f} | {ratio:.2f} |")
    summary = (f"median of A/B over {len(ratios)} cells: {statistics.median(ratios):.3f} "
               f"(min {min(ratios):.2f}, max {max(ratios):.2f}); {args.rounds} interleaved rounds, "
               f"{args.iters} iterations each")
    text = "\n".join(lines) + "\n\n" + summary + "\n"
    print(text)
    with open(os.path.join(args.out, "results.md"), "w") as f:
        f.write(f"A = {os.path.abspath(args.a)}\nB = {os.path.abspath(args.b)}\n\n" + text)
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump({"a": os.path.abspath(args.a), "b": os.path.abspath(args.b), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
