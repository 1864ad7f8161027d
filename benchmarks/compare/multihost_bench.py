#!/usr/bin/env python3
"""Across hosts made of network namespaces (tests/multihost/netns_cluster.sh; needs root): how
much of a veth link's TCP throughput libcollective's all-reduce uses, and which all-reduce
algorithm is fastest for 8-byte calls against the one the planner picks.

  link      2 hosts x 1 rank: iperf3's TCP throughput host 0 -> host 1 and our all-reduce busbw
            at --link-size (64 MiB), interleaved --runs times; ratio = busbw / iperf3 rate (for 2
            ranks busbw is exactly the bytes each link direction carries per second).
  latency   for each HOSTSxRANKS layout in --layouts: 8-byte all-reduce time with COLL_ALGO forced
            to ring, tree (binomial), dbtree (double binary tree) and hier (two-level), and with
            the automatic choice, interleaved --runs times; medians; and the algorithm the
            planner chose (from COLL_DEBUG=TRACE).
  allgather for each layout and each of --ag-sizes: all-gather time with COLL_ALGO forced to ring
            and to bruck, and with the automatic choice, interleaved; medians; whether the
            planner's choice is the faster one.

Writes BUILD_DIR/multihost/results.json and results.md.

examples:
  benchmarks/compare/multihost_bench.py --build-dir build
  benchmarks/compare/multihost_bench.py --build-dir build --runs 3 --layouts 2x2,2x4,4x2 --parts latency
  benchmarks/compare/multihost_bench.py --build-dir build --runs 7 --layouts 4x1,2x2 --parts allgather
"""
import argparse
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CLUSTER = os.path.join(ROOT, "tests", "multihost", "netns_cluster.sh")
ALGOS = ("ring", "tree", "dbtree", "hier", "auto")
AG_ALGOS = ("ring", "bruck", "auto")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build-dir", default=os.path.join(ROOT, "build"), help="the CMake build directory")
    p.add_argument("--runs", type=int, default=5, help="interleaved repetitions (default 5)")
    p.add_argument("--parts", default="link,latency",
                   help="any of link, latency, allgather, comma-separated (default link,latency)")
    p.add_argument("--layouts", default="2x2,2x4", help="HOSTSxRANKS layouts for the latency part (default 2x2,2x4)")
    p.add_argument("--link-size", default=64 << 20, type=int, help="all-reduce bytes for the link part (64 MiB)")
    p.add_argument("--iters", type=int, default=300, help="timed 8-byte calls per run (default 300)")
    p.add_argument("--ag-sizes", default="32,8K,64K,1M,4M",
                   help="all-gather total bytes (all ranks' blocks) for the allgather part (default 32,8K,64K,1M,4M)")
    a = p.parse_args()
    a.build_dir = os.path.abspath(a.build_dir)
    a.parts = [x.strip() for x in a.parts.split(",") if x.strip()]
    units = {"K": 1 << 10, "M": 1 << 20}
    a.ag_sizes = [int(x[:-1]) * units[x[-1]] if x[-1] in units else int(x) for x in a.ag_sizes.upper().split(",")]
    try:
        a.layouts = [tuple(int(v) for v in x.split("x")) for x in a.layouts.split(",")]
    except ValueError:
        p.error(f"--layouts {a.layouts!r}: expected HOSTSxRANKS, comma-separated, e.g. 2x2,2x4")
    if a.runs < 1:
        p.error("--runs must be >= 1")
    return a


def cluster(mode, hosts, per, a, command=(), env=None, timeout=600):
    cmd = ["bash", CLUSTER, mode, str(hosts), str(per), a.build_dir]
    if command:
        cmd += ["--", *command]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=dict(os.environ, **(env or {})))
    if p.returncode == 77:
        sys.exit("multihost_bench: " + p.stdout.strip())
    if p.returncode != 0:
        raise RuntimeError(f"{shlex.join(cmd)} failed ({p.returncode}):\n{p.stdout}{p.stderr}")
    return p.stdout


def perf(a, hosts, per, size, iters, warmups, env, program="all_reduce_perf"):
    prog = os.path.join(a.build_dir, "benchmarks", "perf", program)
    out = cluster("run", hosts, per, a, [prog, "-b", str(size), "-e", str(size), "-n", str(iters), "-w",
                                         str(warmups), "-c", "1"], env)
    return perf_row(out, size)


def perf_row(out, size):
    """A *_perf program's out-of-place time (us) and busbw (GB/s) at `size` bytes, checked."""
    for line in out.splitlines():
        f = line.split()
        if f and f[0] == str(size):
            if f[8] != "0":
                raise RuntimeError(f"{f[8]} wrong values:\n{out}")
            return float(f[5]), float(f[7])  # time (us), busbw (GB/s), out of place
    raise RuntimeError("no result line:\n" + out)


def planner_choice(a, hosts, per, program="all_reduce_perf", collective="AllReduce", size=8):
    prog = os.path.join(a.build_dir, "benchmarks", "perf", program)
    out = cluster("run", hosts, per, a, [prog, "-b", str(size), "-e", str(size), "-n", "2", "-w", "0", "-c", "0"],
                  {"COLL_DEBUG": "TRACE", "COLL_DEBUG_SUBSYS": "COLL"})
    picks = set(re.findall(collective + r" count \d+ float: (\w+)", out))
    return ",".join(sorted(picks)) or "?"


def link_part(a, results, md):
    rates, busbws = [], []
    for r in range(a.runs):
        out = cluster("iperf", 2, 1, a)
        m = re.findall(r"([0-9.]+) Gbits/sec.*receiver", out)
        if not m:
            raise RuntimeError("no iperf3 receiver line:\n" + out)
        rates.append(float(m[-1]))
        _, bw = perf(a, 2, 1, a.link_size, 10, 2, {})
        busbws.append(bw)
        print(f"multihost_bench: link run {r + 1}/{a.runs}: iperf3 {rates[-1]:.2f} Gbit/s, "
              f"all-reduce busbw {bw:.2f} GB/s", flush=True)
    rate, bw = statistics.median(rates), statistics.median(busbws)
    ratio = bw * 8 / rate
    results["link"] = {"iperf_gbit_s": rates, "busbw_gb_s": busbws, "median_ratio": ratio}
    md += [f"## Link use: 2 hosts x 1 rank over a veth pair, all-reduce of {a.link_size >> 20} MiB", "",
           "| run | iperf3 TCP (Gbit/s) | all-reduce busbw (GB/s) | busbw / iperf3 |", "| ---: | ---: | ---: | ---: |"]
    md += [f"| {i + 1} | {x:.2f} | {y:.2f} | {y * 8 / x:.2f} |" for i, (x, y) in enumerate(zip(rates, busbws))]
    md += [f"| median | {rate:.2f} | {bw:.2f} | **{ratio:.2f}** |", ""]


def latency_part(a, results, md):
    results["latency"] = {}
    for hosts, per in a.layouts:
        times = {algo: [] for algo in ALGOS}
        for r in range(a.runs):
            order = ALGOS[r % len(ALGOS):] + ALGOS[:r % len(ALGOS)]
            for algo in order:
                env = {} if algo == "auto" else {"COLL_ALGO": "allreduce:" + algo}
                t, _ = perf(a, hosts, per, 8, a.iters, 20, env)
                times[algo].append(t)
            print(f"multihost_bench: {hosts}x{per} run {r + 1}/{a.runs}: " +
                  ", ".join(f"{x} {times[x][-1]:.1f} us" for x in ALGOS), flush=True)
        med = {algo: statistics.median(v) for algo, v in times.items()}
        fastest = min((x for x in ALGOS if x != "auto"), key=lambda x: med[x])
        choice = planner_choice(a, hosts, per)
        results["latency"][f"{hosts}x{per}"] = {"times_us": times, "median_us": med, "fastest": fastest,
                                                "planner": choice}
        md += [f"## 8-byte all-reduce, {hosts} hosts x {per} ranks ({hosts * per} ranks), median of {a.runs}", "",
               "| algorithm | time (us) | vs fastest |", "| --- | ---: | ---: |"]
        md += [f"| {x} | {med[x]:.1f} | {med[x] / med[fastest]:.2f}x |" for x in ALGOS]
        md += ["", f"Fastest forced algorithm: **{fastest}**; the planner chose **{choice}** "
               f"({'matches' if choice == fastest else 'differs'}).", ""]


def allgather_part(a, results, md):
    results["allgather"] = {}
    for hosts, per in a.layouts:
        times = {(algo, size): [] for algo in AG_ALGOS for size in a.ag_sizes}
        for r in range(a.runs):
            order = AG_ALGOS[r % len(AG_ALGOS):] + AG_ALGOS[:r % len(AG_ALGOS)]
            for size in a.ag_sizes:
                for algo in order:
                    env = {} if algo == "auto" else {"COLL_ALGO": "allgather:" + algo}
                    iters = max(5, min(a.iters, (64 << 20) // max(size, 1) // 8))
                    t, _ = perf(a, hosts, per, size, iters, 10, env, "all_gather_perf")
                    times[(algo, size)].append(t)
            print(f"multihost_bench: all-gather {hosts}x{per} run {r + 1}/{a.runs} done", flush=True)
        md += [f"## All-gather, {hosts} hosts x {per} ranks ({hosts * per} ranks), median of {a.runs}", "",
               "| bytes | ring (us) | bruck (us) | ring / bruck | auto (us) | planner's choice | faster forced |",
               "| ---: | ---: | ---: | ---: | ---: | --- | --- |"]
        layout = {}
        for size in a.ag_sizes:
            med = {algo: statistics.median(times[(algo, size)]) for algo in AG_ALGOS}
            faster = "ring" if med["ring"] <= med["bruck"] else "bruck"
            choice = planner_choice(a, hosts, per, "all_gather_perf", "AllGather", size)
            layout[size] = {"median_us": med, "runs_us": {x: times[(x, size)] for x in AG_ALGOS}, "faster": faster,
                            "planner": choice}
            md.append(f"| {size} | {med['ring']:.1f} | {med['bruck']:.1f} | {med['ring'] / med['bruck']:.2f} | "
                      f"{med['auto']:.1f} | {choice} | {faster} |")
        md.append("")
        results["allgather"][f"{hosts}x{per}"] = layout


def main():
    a = parse_args()
    out_dir = os.path.join(a.build_dir, "multihost")
    os.makedirs(out_dir, exist_ok=True)
    results = {"command": shlex.join(sys.argv), "runs": a.runs, "load_before": os.getloadavg()}
    md = ["# libcollective across network-namespace hosts", "",
          f"Command: `{results['command']}`; load average {results['load_before'][0]:.2f} before, "
          f"{os.cpu_count()} CPUs.", ""]
    start = time.time()
    if "link" in a.parts:
        link_part(a, results, md)
    if "latency" in a.parts:
        latency_part(a, results, md)
    if "allgather" in a.parts:
        allgather_part(a, results, md)
    results["load_after"] = os.getloadavg()
    results["seconds"] = round(time.time() - start, 1)
    md.append(f"Load average after: {results['load_after'][0]:.2f}; {results['seconds']} s in all.")
    with open(os.path.join(out_dir, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    with open(os.path.join(out_dir, "results.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))
    print(f"multihost_bench: wrote {out_dir}/results.json, results.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
