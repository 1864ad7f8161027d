#!/usr/bin/env python3
"""Runs the same float32 sizes of every collective through libcollective (the *_perf programs),
Open MPI (mpi_bench.c: MPI_Allreduce, MPI_Allgather, ...) and Gloo (gloo_bench.py:
torch.distributed, where it has the operation), side by side on this host, and reports time, bus
bandwidth and the ratios between them.

Every library gets the same sizes (meaning what they mean for our perf programs: collectives.py),
warm-up calls and timed iterations, the same CPU binding (a core per rank when they fit: collrun's
default, and mpirun --bind-to core), and is timed the same way (warm-ups, a barrier, iterations back
to back, average per call, maximum over ranks; busbw = algbw times the collective's factor, as in
nccl-tests). The libraries' runs are interleaved --runs times, rotating their order, and the
medians (or with --stat min, the best runs) are reported, so that a noisy neighbour hurts all
alike. Iterations shrink with the size so that one size takes about --budget seconds in the
slowest library run (Gloo when it is among --libs): a short calibration run of every library,
not counted, measures each size's time per call first (--no-calibrate sizes the runs by a model
of the libraries' speed instead, which gave some large cells a fraction of their budget:
docs/performance.md, "What we tried and why it lost", "Measuring").

Writes to --out-dir: results.json (every run and the combined times), results.md (every table:
first each peer's time / ours per collective and size, then a section per collective) and, per
collective, <coll>.md (its tables) and <coll>.png (busbw and time against size).

examples:
  benchmarks/compare/compare.py --colls all_reduce     # 2 ranks, 8 B, 64 KiB, 1 MiB, 16 MiB, 64 MiB
  benchmarks/compare/compare.py --colls broadcast,gather --ranks 2,4 --runs 5
  benchmarks/compare/compare.py --sweep --runs 1       # every collective, 8 B to 64 MiB, factor 2
  benchmarks/compare/compare.py --mpi-args "--mca btl_vader_single_copy_mechanism cma"
  benchmarks/compare/compare.py --sockets --sizes 8,1M,16M   # TCP only: ours with COLL_TRANSPORTS=^shm,
                                                             # Open MPI with --mca btl tcp,self
  benchmarks/compare/compare.py --sweep --ranks 2,4 --transports shm,sockets --out-dir docs/perf/collectives
                                                       # everything; sockets results in OUT/sockets
  benchmarks/compare/compare.py --colls allgatherv,alltoallv,reducescatterv --ranks 3,4 --counts linear
                                                       # the variable-count cells against MPI_Allgatherv,
                                                       # MPI_Alltoallv and MPI_Reduce_scatter
"""
import argparse
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import time

import compare_report
from collectives import COUNT_PATTERNS, MISSING, REDUCING, VARIABLE, effective_size, parse_names

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
LIBS = ("ours", "mpi", "gloo")
TRANSPORTS = ("shm", "sockets")
# Debian's python3-torch and python3-matplotlib live in the system interpreter, which may not be
# the first python3 in PATH (pyenv, venvs).
DEFAULT_PYTHON = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable
LABELS = {"ours": "libcollective", "mpi": "Open MPI", "gloo": "Gloo"}
BUILD_HINT = ("cmake -S {root} -B {build} -DCMAKE_BUILD_TYPE=Release && cmake --build {build} -j2 "
              "(or tools/quickstart.sh)")


def parse_bytes(text):
    t = text.strip().upper().rstrip("B").rstrip("I")
    scale = 1
    for suffix, s in (("K", 1 << 10), ("M", 1 << 20), ("G", 1 << 30)):
        if t.endswith(suffix):
            t, scale = t[:-1], s
    value = int(t) * scale
    if value < 4:
        raise argparse.ArgumentTypeError(f"size {text!r} is smaller than one float32")
    return value


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--colls", default="all", help="collectives, comma-separated, as the perf programs are named "
                   "(all_reduce,all_gather,alltoall,broadcast,gather,reduce,reduce_scatter,scatter,sendrecv,"
                   "allgatherv,alltoallv,reducescatterv); default all")
    p.add_argument("--counts", default="linear", choices=COUNT_PATTERNS,
                   help="how the variable-count collectives split each size between ranks, in every library "
                   "(the perf programs' --counts; default linear)")
    p.add_argument("--ranks", default="2", help="rank counts, comma-separated (default 2)")
    p.add_argument("--sizes", default="8,64K,1M,16M,64M", help="bytes, comma-separated, K/M/G suffixes "
                   "(default 8,64K,1M,16M,64M)")
    p.add_argument("--sweep", action="store_true", help="every power of two from 8 B to 64 MiB instead of --sizes")
    # The caps let --budget decide: at 1000 calls and 5 warm-ups a sub-microsecond call was timed
    # for a third of a millisecond, and a cell's ratio moved from run to run (docs/performance.md).
    p.add_argument("--iters", type=int, default=2000000,
                   help="most timed iterations per size (default 2000000: --budget decides)")
    p.add_argument("--min-iters", type=int, default=5, help="fewest timed iterations per size (default 5)")
    p.add_argument("--warmups", type=int, default=50, help="most warm-up calls per size (default 50)")
    p.add_argument("--budget", type=float, default=0.5,
                   help="seconds one size may take in the slowest library; sets the iterations (default 0.5)")
    p.add_argument("--no-calibrate", dest="calibrate", action="store_false",
                   help="size the iterations by a model of the libraries' speed, without the calibration run")
    p.add_argument("--runs", type=int, default=3, help="repeat the libraries' runs this many times (default 3)")
    p.add_argument("--stat", choices=("median", "min"), default="median",
                   help="how the runs combine: median (default) or min (the best run; steadier on a busy host)")
    p.add_argument("--libs", default="ours,mpi,gloo", help="which of ours,mpi,gloo to run (default all)")
    p.add_argument("--check", action="store_true", help="also verify one call per size in every library")
    p.add_argument("--build-dir", default=os.path.join(ROOT, "build"), help="the CMake build directory")
    p.add_argument("--out-dir", default=None, help="where to write results (default BUILD_DIR/compare, or "
                   "BUILD_DIR/compare-sockets with --sockets; with --transports shm,sockets the sockets results go "
                   "to OUT_DIR/sockets)")
    p.add_argument("--mpi-args", default="", help="extra mpirun arguments, e.g. MCA settings (one string)")
    p.add_argument("--sockets", action="store_true",
                   help="TCP on loopback only, as between hosts: libcollective with COLL_TRANSPORTS=^shm, Open MPI "
                   "with --mca btl tcp,self (Gloo always uses TCP); the same as --transports sockets")
    p.add_argument("--transports", default=None, help="shm, sockets or shm,sockets (interleaved in every run); "
                   "default shm")
    p.add_argument("--timeout", type=int, default=600, help="seconds one launch may take (default 600)")
    p.add_argument("--no-plot", action="store_true", help="skip the PNGs")
    p.add_argument("--python", default=DEFAULT_PYTHON,
                   help=f"the interpreter with torch that runs the Gloo ranks (default {DEFAULT_PYTHON})")
    a = p.parse_args(argv)
    try:
        a.ranks = [int(x) for x in a.ranks.split(",")]
        if any(n < 1 for n in a.ranks):
            raise ValueError
    except ValueError:
        p.error(f"--ranks {a.ranks!r}: expected positive integers, comma-separated")
    try:
        a.colls = parse_names(a.colls)
    except ValueError as e:
        p.error(f"--colls: {e}")
    a.sizes = [8 << k for k in range(24)] if a.sweep else [parse_bytes(s) for s in a.sizes.split(",")]
    a.sizes = [s // 4 * 4 for s in a.sizes]
    a.libs = [x.strip() for x in a.libs.split(",") if x.strip()]
    if any(x not in LIBS for x in a.libs):
        p.error(f"--libs: expected a subset of {','.join(LIBS)}")
    if a.runs < 1 or a.iters < 1 or a.min_iters < 1 or a.min_iters > a.iters:
        p.error("--runs, --iters and --min-iters must be >= 1, and --min-iters <= --iters")
    a.transports = [t.strip() for t in (a.transports or ("sockets" if a.sockets else "shm")).split(",")]
    if not a.transports or any(t not in TRANSPORTS for t in a.transports) or (a.sockets and "shm" in a.transports):
        p.error("--transports: expected shm, sockets or shm,sockets (and not shm with --sockets)")
    a.build_dir = os.path.abspath(a.build_dir)
    default = {"shm": "compare", "sockets": "compare-sockets"}[a.transports[0]]
    a.out_dir = os.path.abspath(a.out_dir or os.path.join(a.build_dir, default))
    a.out_dirs = {t: a.out_dir if k == 0 else os.path.join(a.out_dir, t) for k, t in enumerate(a.transports)}
    return a


def measured_sizes(coll, n, sizes):
    """The sizes as measured at n ranks: whole blocks of whole elements (collectives.py)."""
    return sorted({effective_size(coll, s, n) for s in sizes})


def plan(size, nranks, a, transport, budget=None):
    """(iters, warmups) for a size: about budget (default --budget) seconds in the slowest library
    run, by a model of the libraries' speed (calibrated() replaces it by measurement). Gloo costs
    on this kind of host roughly 250 us per rank per call plus 1 ns per byte per rank (TCP
    loopback); without Gloo, Open MPI and ours take at most about 10 us per rank per call over
    TCP (1 us on shared memory) plus 0.5 ns per byte per rank. Sizing by Gloo when it is not run
    left an 8-byte cell at 1000 calls, a few milliseconds: one hiccup moved its median. (The
    model's constants are rough, and calibrated() corrects them: (design value).)"""
    if "gloo" in a.libs:
        est = 2.5e-4 * nranks + size * nranks / 1e9
    else:
        per_call = 1e-5 if transport == "sockets" else 1e-6
        est = per_call * nranks + size * nranks / 2e9
    return plan_for_call_time(est, a, a.budget if budget is None else budget)


def plan_for_call_time(seconds_per_call, a, budget):
    iters = max(a.min_iters, min(a.iters, int(budget / max(seconds_per_call, 1e-9))))
    return iters, max(1, min(a.warmups, iters // 2))


# The calibration run's share of --budget: long enough for a time per call within a factor of two
# of the counted runs' (the model errs by several times, mostly too slow at large sizes on shared
# memory).
CALIBRATION_SHARE = 0.2


def run(cmd, timeout, env=None):
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout} s: {shlex.join(cmd)}"
    if p.returncode != 0:
        tail = "\n".join((p.stdout + p.stderr).strip().splitlines()[-15:])
        return None, f"exit status {p.returncode}: {shlex.join(cmd)}\n{tail}"
    return (p.stdout, time.time() - t0), None


def rows(text, ncols):
    out = []
    for line in text.splitlines():
        f = line.split()
        if not f or line.startswith("#") or len(f) < ncols or not f[0].isdigit():
            continue
        out.append(f)
    return out


class Tools:
    """Finds or builds the programs; records why a library cannot run."""

    def __init__(self, a):
        self.a = a
        self.missing = {}
        work = os.path.join(a.out_dir, "bin")
        os.makedirs(work, exist_ok=True)
        self.collrun = os.path.join(a.build_dir, "tools", "collrun", "collrun")
        if not os.access(self.collrun, os.X_OK):
            self.collrun = self.build_collrun(work)
        self.perf = {c: os.path.join(a.build_dir, "benchmarks", "perf", f"{c}_perf") for c in a.colls}
        unbuilt = [p for p in self.perf.values() if not os.access(p, os.X_OK)]
        if "ours" in a.libs and unbuilt:
            self.missing["ours"] = (f"{', '.join(unbuilt)} not built; build libcollective first: "
                                    + BUILD_HINT.format(root=ROOT, build=a.build_dir))
        if "ours" in a.libs and self.collrun is None:
            self.missing["ours"] = "collrun could not be built"
        self.mpi_bench = None
        if "mpi" in a.libs:
            self.mpi_bench = self.build_mpi(work)
        if "gloo" in a.libs:
            if self.collrun is None:
                self.missing["gloo"] = "collrun could not be built"
            else:
                probe = subprocess.run([a.python, "-c", "import torch.distributed as d; "
                                        "assert d.is_available() and d.is_gloo_available()"], capture_output=True)
                if probe.returncode != 0:
                    self.missing["gloo"] = ("torch with Gloo is not importable by " + a.python
                                            + "; install python3-torch (tools/install-deps.sh)")

    def build_collrun(self, work):
        """collrun does not need the library: compile it directly when the build lacks it."""
        out = os.path.join(work, "collrun")
        srcs = [os.path.join(ROOT, "tools", "collrun", f)
                for f in ("collrun.cc", "options.cc", "spawn.cc", "tagged_output.cc")]
        cmd = ["g++", "-std=c++17", "-O2", "-I" + os.path.join(ROOT, "include"), *srcs, "-o", out]
        if shutil.which("g++") is None or subprocess.run(cmd).returncode != 0:
            return None
        return out

    def build_mpi(self, work):
        mpicc = shutil.which("mpicc")
        if mpicc is None or shutil.which("mpirun") is None:
            self.missing["mpi"] = "mpicc/mpirun not found; install openmpi-bin and libopenmpi-dev"
            return None
        src = os.path.join(HERE, "mpi_bench.c")
        out = os.path.join(work, "mpi_bench")
        if not os.path.exists(out) or os.path.getmtime(out) < os.path.getmtime(src):
            p = subprocess.run([mpicc, "-O2", "-o", out, src], capture_output=True, text=True)
            if p.returncode != 0:
                self.missing["mpi"] = "mpicc failed:\n" + p.stderr
                return None
        return out


def run_ours(tools, a, job):
    """One collrun for all the job's sizes, each with its own iteration count (--sizes, -n and -w
    lists), as Open MPI's mpi_bench runs them: a launch per size left our large sizes in a fresh
    process (pages, connections and plan choices all new) while Open MPI's ran after the smaller
    ones, which made Open MPI's launch per size measurably slower than its one launch at 1-64 MiB
    all-to-all (docs/performance.md, "What we tried and why it lost", "Measuring")."""
    cmd = [tools.collrun, "-n", str(job.n), "--timeout", str(a.timeout), tools.perf[job.coll],
           "--sizes", ",".join(str(s) for s in job.sizes), "-n", ",".join(str(p[0]) for p in job.plans),
           "-w", ",".join(str(p[1]) for p in job.plans), "-c", "1" if a.check else "0", "-d", "float"]
    cmd += ["-o", "sum"] if job.coll in REDUCING else []
    cmd += ["--counts", a.counts] if job.coll in VARIABLE else []
    env = dict(os.environ, COLL_TRANSPORTS="^shm") if job.transport == "sockets" else None
    res, err = run(cmd, a.timeout + 30, env=env)
    if err:
        return None, err
    # Broadcast is compared in place: MPI_Bcast and Gloo's broadcast have one buffer, while our
    # out-of-place root also copies its input into its output, a copy theirs never make.
    time_col, wrong_col = (9, 12) if job.coll == "broadcast" else (5, 8)
    results = {}
    for f in rows(res[0], 13):
        if f[wrong_col] not in ("0", "N/A"):
            return None, f"{job.coll}_perf reported {f[wrong_col]} wrong elements at {f[0]} B"
        results[int(f[0])] = float(f[time_col])
    missing = [s for s in job.sizes if s not in results]
    if missing:
        return None, f"{job.coll}_perf printed no row for {missing} B: {shlex.join(cmd)}"
    return results, None


def run_listed(cmd, a):
    res, err = run(cmd, a.timeout + 30, env=mpi_env())
    if err:
        return None, err
    results = {}
    for f in rows(res[0], 7):
        if int(f[6]) > 0:
            return None, f"{f[6]} wrong elements at {f[0]} B:\n{res[0]}"
        results[int(f[0])] = float(f[3])
    return results, None


def mpi_env():
    env = dict(os.environ)
    if os.geteuid() == 0:
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    return env


def lists(job):
    return ["--coll", job.coll, "--sizes", ",".join(str(s) for s in job.sizes),
            "--iters", ",".join(str(p[0]) for p in job.plans), "--warmups", ",".join(str(p[1]) for p in job.plans)]


def mpi_args(a, transport):
    return ("--mca btl tcp,self " + a.mpi_args).strip() if transport == "sockets" else a.mpi_args


def run_mpi(tools, a, job):
    # Bound like ours and Gloo's ranks (collrun's default --bind auto): a core each when they fit.
    binding = "core" if job.n <= (os.cpu_count() or 1) else "none"
    cmd = ["mpirun", "--oversubscribe", "-np", str(job.n), "--bind-to", binding, "--timeout", str(a.timeout)]
    if os.geteuid() == 0:
        cmd.insert(1, "--allow-run-as-root")
    cmd += shlex.split(mpi_args(a, job.transport)) + [tools.mpi_bench] + lists(job)
    cmd += ["--counts", a.counts] if job.coll in VARIABLE else []
    return run_listed(cmd + ["--check", "1" if a.check else "0"], a)


def run_gloo(tools, a, job):
    cmd = [tools.collrun, "-n", str(job.n), "--timeout", str(a.timeout), a.python, os.path.join(HERE, "gloo_bench.py")]
    return run_listed(cmd + lists(job) + ["--check", "1" if a.check else "0"], a)


class Job:
    """One launch: a library's sizes of one collective at one rank count over one transport."""

    def __init__(self, a, transport, n, coll, budget=None):
        self.transport, self.n, self.coll = transport, n, coll
        self.sizes = measured_sizes(coll, n, a.sizes)
        self.plans = [plan(s, n, a, transport, budget) for s in self.sizes]


def launch(runner, tools, a, job, what):
    """One library's launch of a job, with a progress line naming it and saying how long it took."""
    t0 = time.time()
    res, err = runner(tools, a, job)
    print(f"compare: {what}: {'ok' if res else 'FAILED'} ({time.time() - t0:.1f} s)", flush=True)
    return res, err


def calibrated(a, tools, libs, runners, transport, n, coll):
    """The job with each size's iterations sized by measurement: every library runs once with a
    fifth of the model's budget, and the slowest library's time per call sets the counted runs'
    iterations. A library that fails here keeps the model's plan (its failure shows in the runs)."""
    job = Job(a, transport, n, coll)
    if not a.calibrate:
        return job
    probe = Job(a, transport, n, coll, a.budget * CALIBRATION_SHARE)
    slowest = {}
    for lib in libs:
        if (lib, coll) in MISSING:
            continue
        res, err = launch(runners[lib], tools, a, probe, f"calibration, {transport}, {n} ranks, {coll}, {LABELS[lib]}")
        if err:
            return job
        for size, us in res.items():
            slowest[size] = max(slowest.get(size, 0.0), us)
    job.plans = [plan_for_call_time(slowest[s] * 1e-6, a, a.budget) if s in slowest else p
                 for s, p in zip(job.sizes, job.plans)]
    return job


def versions(a):
    v = {"host": platform.node(), "cpus": os.cpu_count(), "python": platform.python_version()}
    try:
        v["openmpi"] = subprocess.run(["mpirun", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    except (OSError, IndexError):
        pass
    # The Gloo ranks' interpreter, which need not be this one.
    p = subprocess.run([a.python, "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True)
    if p.returncode == 0:
        v["torch"] = p.stdout.strip()
    m = re.search(r"project\(collective\s+VERSION\s+([0-9.]+)", open(os.path.join(ROOT, "CMakeLists.txt")).read())
    v["collective"] = m.group(1) if m else "?"
    return v


def reexec_for_matplotlib():
    """Plots need matplotlib: when this interpreter lacks it and the system one has it, rerun there."""
    try:
        import matplotlib  # noqa: F401
        return
    except ImportError:
        pass
    if "--no-plot" in sys.argv or os.environ.get("COMPARE_REEXEC") or DEFAULT_PYTHON == sys.executable:
        return
    if subprocess.run([DEFAULT_PYTHON, "-c", "import matplotlib"], capture_output=True).returncode == 0:
        os.environ["COMPARE_REEXEC"] = "1"
        os.execv(DEFAULT_PYTHON, [DEFAULT_PYTHON, os.path.abspath(__file__)] + sys.argv[1:])


def measure(a, tools, libs):
    """Every run: transports, rank counts and collectives in turn, the libraries in an order that
    rotates from run to run. Returns raw {transport: {coll: {lib: {n: [{size: us}]}}}}, errors and
    the jobs (with their iterations) by (transport, n, coll)."""
    runners = {"ours": run_ours, "mpi": run_mpi, "gloo": run_gloo}
    raw = {t: {c: {lib: {n: [] for n in a.ranks} for lib in libs} for c in a.colls} for t in a.transports}
    errors = []
    jobs = {(t, n, coll): calibrated(a, tools, libs, runners, t, n, coll)
            for t in a.transports for n in a.ranks for coll in a.colls}
    for r in range(a.runs):
        for t in a.transports:
            for n in a.ranks:
                for coll in a.colls:
                    job = jobs[(t, n, coll)]
                    for lib in libs[r % len(libs):] + libs[:r % len(libs)]:
                        if (lib, coll) in MISSING:
                            continue
                        res, err = launch(runners[lib], tools, a, job,
                                          f"run {r + 1}/{a.runs}, {t}, {n} ranks, {coll}, {LABELS[lib]}")
                        if err:
                            errors.append(f"{t}, {coll}, {LABELS[lib]}, {n} ranks: {err}")
                            print(f"compare: {err}", file=sys.stderr)
                        else:
                            raw[t][coll][lib][n].append(res)
    return raw, errors, jobs


def combine(raw_coll, a):
    """{lib: {n: [runs]}} -> {lib: {n: {size: median or min}}}."""
    pick = statistics.median if a.stat == "median" else min
    out = {}
    for lib, by_n in raw_coll.items():
        out[lib] = {}
        for n, runs in by_n.items():
            sizes = sorted({s for run_ in runs for s in run_})
            out[lib][n] = {s: pick([run_[s] for run_ in runs if s in run_]) for s in sizes}
    return out


def main(argv=None):
    reexec_for_matplotlib()
    a = parse_args(argv)
    for d in a.out_dirs.values():
        os.makedirs(d, exist_ok=True)
    tools = Tools(a)
    for lib, why in tools.missing.items():
        print(f"compare: skipping {LABELS[lib]}: {why}", file=sys.stderr)
    libs = [lib for lib in a.libs if lib not in tools.missing]
    if not libs:
        print("compare: nothing to run", file=sys.stderr)
        return 1
    load_before = os.getloadavg()
    t_start = time.time()
    raw, errors, jobs = measure(a, tools, libs)
    meta = versions(a)
    meta.update({"command": shlex.join(sys.argv if argv is None else ["compare.py"] + argv), "runs": a.runs,
                 "load_before": load_before, "load_after": os.getloadavg(),
                 "seconds": round(time.time() - t_start, 1)})
    print()
    for t in a.transports:
        med = {c: combine(raw[t][c], a) for c in a.colls}
        meta_t = dict(meta, mpi_args=mpi_args(a, t), calibrated=a.calibrate,
                      plans={c: {n: dict(zip(jobs[(t, n, c)].sizes, jobs[(t, n, c)].plans)) for n in a.ranks}
                             for c in a.colls})
        written = compare_report.write(a.out_dirs[t], med, raw[t], meta_t, a, libs,
                                       lambda c, n: measured_sizes(c, n, a.sizes),
                                       [e for e in errors if e.startswith(t + ",")], t)
        print(f"compare: wrote {a.out_dirs[t]}/: {', '.join(written)}")
        for peer in [lib for lib in libs if lib != "ours"] if "ours" in libs and a.runs > 1 else []:
            for n in a.ranks:
                above, holds, below, _ = compare_report.interval_verdict(raw[t], a.colls, n, a.sizes, peer)
                print(f"compare: {t}, {n} ranks, against {LABELS[peer]}: {above} cells faster, {holds} undecided, "
                      f"{below} slower (each paired ratio's interval; results.md)")
    print(f"compare: load average {load_before[0]:.2f} before, {meta['load_after'][0]:.2f} after; "
          f"{meta['seconds']} s in all")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
