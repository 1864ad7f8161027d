#!/usr/bin/env python3
"""Init at scale: for N ranks on this machine, the time to initialise and run one 8-byte
all-reduce (`collrun -n N all_reduce_perf -b 8 -e 8 -n 1 -w 0`, median of --runs), and what each
rank holds while a job runs: open file descriptors (and how many are sockets), private resident
memory, the shared memory it has mapped (both ends of a FIFO count it), and the shared memory the job takes from the machine (Shmem in /proc/meminfo, before and during).

    benchmarks/scale/init_scale.py --build-dir build --ranks 16,32,64,128,256
    benchmarks/scale/init_scale.py --build-dir build --before /path/to/old/build   # side by side

--before runs the same measurements with another build's collrun and all_reduce_perf, interleaved
with this one's, so that both see the same machine. Prints a Markdown table.
"""
import argparse
import os
import signal
import statistics
import subprocess
import sys
import time


def programs(build_dir):
    collrun = os.path.join(build_dir, "tools", "collrun", "collrun")
    perf = os.path.join(build_dir, "benchmarks", "perf", "all_reduce_perf")
    for path in (collrun, perf):
        if not os.access(path, os.X_OK):
            sys.exit(f"init_scale: {path} not found: build the project first (cmake --build {build_dir})")
    return collrun, perf


def environment(transports):
    env = dict(os.environ)
    if transports == "sockets":
        env["COLL_TRANSPORTS"] = "self,net"
    return env


def timed_run(collrun, perf, n, transports, timeout):
    start = time.monotonic()
    p = subprocess.run([collrun, "-n", str(n), "--timeout", str(timeout), perf, "-b", "8", "-e", "8", "-n", "1",
                        "-w", "0"], env=environment(transports), stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    seconds = time.monotonic() - start
    if p.returncode != 0:
        return None, p.stderr.strip().splitlines()[-1:] or [f"exit {p.returncode}"]
    return seconds, None


def shmem_kib():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("Shmem:"):
                return int(line.split()[1])
    return 0


def rank_pids(collrun_pid, perf_name):
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{entry}/comm") as f:
                comm = f.read().strip()
        except OSError:
            continue
        if int(fields[1]) == collrun_pid and comm == perf_name[:15]:
            pids.append(int(entry))
    return pids


def footprint(pid):
    """(fds, sockets, private and shared resident KiB) of one process, or None if it is gone."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
        sockets = 0
        for fd in fds:
            try:
                sockets += os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:")
            except OSError:
                pass
        anon = shared = 0
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    anon = int(line.split()[1])
                elif line.startswith("RssShmem:"):
                    shared = int(line.split()[1])
        return len(fds), sockets, anon, shared
    except OSError:
        return None


def held_run(collrun, perf, n, transports, settle):
    """Starts a long job, samples every rank `settle` seconds after all have started (past init),
    then stops it."""
    base = shmem_kib()
    p = subprocess.Popen([collrun, "-n", str(n), perf, "-b", "8", "-e", "8", "-n", "100000000", "-w", "0", "-c", "0"],
                         env=environment(transports), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(rank_pids(p.pid, os.path.basename(perf))) < n:
            time.sleep(0.05)
        time.sleep(settle)  # past init and into the all-reduces
        samples = [s for s in (footprint(pid) for pid in rank_pids(p.pid, os.path.basename(perf))) if s]
        shm = max(0, shmem_kib() - base)
    finally:
        os.killpg(p.pid, signal.SIGTERM)
        p.wait()
    if len(samples) < n:
        return None
    non_zero = samples[1:] if n > 1 else samples  # rank 0 also serves the rendezvous store
    return {
        "fds": statistics.median(s[0] for s in non_zero),
        "fds_max": max(s[0] for s in samples),
        "sockets": statistics.median(s[1] for s in non_zero),
        "anon_mib": statistics.median(s[2] for s in samples) / 1024,
        "mapped_shm_mib": statistics.median(s[3] for s in samples) / 1024,
        "shm_mib": shm / 1024,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-dir", default="build")
    parser.add_argument("--before", help="another build directory, measured beside --build-dir")
    parser.add_argument("--ranks", default="16,32,64,128,256")
    parser.add_argument("--transports", default="shm,sockets", help="shm, sockets or shm,sockets")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--settle", type=float, default=0.5,
                        help="seconds to wait, beyond 1.5 x the init time, after every rank started")
    parser.add_argument("--timeout", type=int, default=120)
    args = parser.parse_args()
    builds = [("after", programs(args.build_dir))]
    if args.before:
        builds.insert(0, ("before", programs(args.before)))
    rows = []
    for transports in args.transports.split(","):
        for n in [int(x) for x in args.ranks.split(",")]:
            times = {label: [] for label, _ in builds}
            failures = {label: None for label, _ in builds}
            for _ in range(args.runs):
                for label, (collrun, perf) in builds:  # interleaved
                    seconds, error = timed_run(collrun, perf, n, transports, args.timeout)
                    if seconds is None:
                        failures[label] = error
                    else:
                        times[label].append(seconds)
            for label, (collrun, perf) in builds:
                # Past init: its measured time again, and --settle more.
                settle = args.settle + (1.5 * statistics.median(times[label]) if times[label] else 0)
                held = held_run(collrun, perf, n, transports, settle) if not failures[label] else None
                t = f"{statistics.median(times[label]):.2f} s" if times[label] else "failed"
                if failures[label]:
                    t += f" ({len(times[label])}/{args.runs} ran; {' '.join(failures[label])[:80]})"
                row = [transports, str(n), label, t]
                if held:
                    row += [f"{held['fds']:.0f}", f"{held['sockets']:.0f}", f"{held['anon_mib']:.1f} MiB", f"{held['mapped_shm_mib']:.1f} MiB",
                            f"{held['shm_mib']:.0f} MiB"]
                else:
                    row += ["-", "-", "-", "-", "-"]
                rows.append(row)
                print("init_scale: " + " | ".join(row), file=sys.stderr, flush=True)
    print("| transports | ranks | build | init + 8 B all-reduce (median) | fds per rank | sockets per rank | private memory per rank | shared memory mapped per rank | shared memory, whole job |")
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
