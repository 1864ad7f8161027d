#!/usr/bin/env python3
"""What COLL_NET_ENCRYPT=1 costs: 2-rank all-reduce over sockets, plaintext and encrypted side by
side (interleaved in one run, so that both meet the same machine), at 8 B, 1 MiB and 64 MiB, in
two settings:

  loopback  2 ranks on this host, sockets only (COLL_TRANSPORTS=^shm), launched by collrun;
  netns     2 hosts x 1 rank, each host a network namespace joined by a veth pair
            (tests/multihost/netns_cluster.sh; needs root, skipped with a message otherwise).

Prints a markdown table of medians (time in us, busbw in GB/s, encrypted / plaintext time) with
the date, the machine's load and the command, for docs/security.md.

examples:
  benchmarks/compare/encryption_cost.py --build-dir build --runs 7
  benchmarks/compare/encryption_cost.py --build-dir build --runs 5 --parts netns
"""
import argparse
import datetime
import os
import platform
import shlex
import statistics
import subprocess
import sys

import multihost_bench

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
# Timed calls and warm-up calls per size: a run of each takes about the same time.
PLANS = {8: (2000, 100), 1 << 20: (100, 10), 64 << 20: (5, 2)}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build-dir", default=os.path.join(ROOT, "build"), help="the CMake build directory")
    p.add_argument("--runs", type=int, default=7, help="interleaved repetitions of each (default 7)")
    p.add_argument("--parts", default="loopback,netns", help="loopback, netns or both (default both)")
    a = p.parse_args()
    a.build_dir = os.path.abspath(a.build_dir)
    a.parts = [x.strip() for x in a.parts.split(",") if x.strip()]
    return a


def loopback_perf(a, size, iters, warmups, env):
    collrun = os.path.join(a.build_dir, "tools", "collrun", "collrun")
    prog = os.path.join(a.build_dir, "benchmarks", "perf", "all_reduce_perf")
    cmd = [collrun, "-n", "2", prog, "-b", str(size), "-e", str(size), "-n", str(iters), "-w", str(warmups), "-c", "1"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, COLL_TRANSPORTS="^shm", **env))
    if p.returncode != 0:
        raise RuntimeError(f"{shlex.join(cmd)} failed ({p.returncode}):\n{p.stdout}{p.stderr}")
    return multihost_bench.perf_row(p.stdout, size)


def measure(a, part):
    """{(size, encrypted): [(time, busbw), ...]} over a.runs interleaved runs."""
    runs = {(size, enc): [] for size in PLANS for enc in (False, True)}
    for r in range(a.runs):
        for size, (iters, warmups) in PLANS.items():
            # Alternate which goes first, so that neither always runs on a warmer machine.
            for enc in ((False, True) if r % 2 == 0 else (True, False)):
                env = {"COLL_NET_ENCRYPT": "1" if enc else "0"}
                if part == "loopback":
                    runs[(size, enc)].append(loopback_perf(a, size, iters, warmups, env))
                else:
                    runs[(size, enc)].append(multihost_bench.perf(a, 2, 1, size, iters, warmups, env))
        print(f"encryption_cost: {part} run {r + 1}/{a.runs} done", file=sys.stderr, flush=True)
    return runs


def table(part, runs, a):
    title = {"loopback": "2 ranks on one host over TCP loopback (COLL_TRANSPORTS=^shm)",
             "netns": "2 hosts x 1 rank, network namespaces joined by a veth pair"}[part]
    md = [f"{title}; medians of {a.runs} interleaved runs:", "",
          "| bytes | plaintext (us) | encrypted (us) | encrypted / plaintext | plaintext busbw (GB/s) | "
          "encrypted busbw (GB/s) |", "| ---: | ---: | ---: | ---: | ---: | ---: |"]
    for size in PLANS:
        plain = [statistics.median(x) for x in zip(*runs[(size, False)])]
        sealed = [statistics.median(x) for x in zip(*runs[(size, True)])]
        md.append(f"| {size} | {plain[0]:.1f} | {sealed[0]:.1f} | {sealed[0] / plain[0]:.2f}x | {plain[1]:.3f} | "
                  f"{sealed[1]:.3f} |")
    return md + [""]


def main():
    a = parse_args()
    load = os.getloadavg()[0]
    md = [f"{datetime.date.today().isoformat()}, {platform.node()} ({os.cpu_count()} CPUs), load average "
          f"{load:.2f} before; `{shlex.join(sys.argv)}`", ""]
    for part in a.parts:
        md += table(part, measure(a, part), a)
    md.append(f"Load average after: {os.getloadavg()[0]:.2f}.")
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
