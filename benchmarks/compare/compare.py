#!/usr/bin/env python3
"""Runs the same float32 sum all-reduce sizes through libcollective (all_reduce_perf), Open MPI
(MPI_Allreduce) and Gloo (torch.distributed), side by side on this host, and reports time, bus
bandwidth and the ratios between them.

Every library gets the same sizes, warm-up calls and timed iterations, the same CPU binding (a
core per rank when they fit: collrun's default, and mpirun --bind-to core), and is timed the same
way (warm-ups, a barrier, iterations back to back, average per call, maximum over ranks; busbw =
algbw * 2(n-1)/n as in nccl-tests). The three runs are interleaved --runs times, rotating their
order, and the medians (or with --stat min, the best runs) are reported, so that a noisy
neighbour hurts all three alike. Iterations shrink with the size so that one size takes about
--budget seconds in the slowest library (Gloo).

Writes to --out-dir: results.json (every run and the combined times), results.md (the tables) and
allreduce.png (busbw and time against size, per library and rank count).

examples:
  benchmarks/compare/compare.py                        # 2 ranks, 8 B, 64 KiB, 1 MiB, 16 MiB, 64 MiB
  benchmarks/compare/compare.py --ranks 2,4 --runs 5
  benchmarks/compare/compare.py --sweep --runs 1       # 8 B to 64 MiB, factor 2
  benchmarks/compare/compare.py --mpi-args "--mca btl_vader_single_copy_mechanism cma"
  benchmarks/compare/compare.py --sockets --sizes 8,1M,16M   # TCP only: ours with COLL_TRANSPORTS=^shm,
                                                             # Open MPI with --mca btl tcp,self
"""
import argparse
import json
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
LIBS = ("ours", "mpi", "gloo")
# Debian's python3-torch and python3-matplotlib live in the system interpreter, which may not be
# the first python3 in PATH (pyenv, venvs).
DEFAULT_PYTHON = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable
LABELS = {"ours": "libcollective", "mpi": "Open MPI", "gloo": "Gloo"}
SHORT = {"ours": "ours", "mpi": "MPI", "gloo": "Gloo"}
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


def human(size):
    for unit, s in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= s and size % s == 0:
            return f"{size // s} {unit}"
    return f"{size} B"


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ranks", default="2", help="rank counts, comma-separated (default 2)")
    p.add_argument("--sizes", default="8,64K,1M,16M,64M", help="bytes, comma-separated, K/M/G suffixes "
                   "(default 8,64K,1M,16M,64M)")
    p.add_argument("--sweep", action="store_true", help="every power of two from 8 B to 64 MiB instead of --sizes")
    p.add_argument("--iters", type=int, default=1000, help="most timed iterations per size (default 1000)")
    p.add_argument("--min-iters", type=int, default=5, help="fewest timed iterations per size (default 5)")
    p.add_argument("--warmups", type=int, default=5, help="most warm-up calls per size (default 5)")
    p.add_argument("--budget", type=float, default=0.5,
                   help="seconds one size may take in the slowest library; sets the iterations (default 0.5)")
    p.add_argument("--runs", type=int, default=3, help="repeat the trio this many times (default 3)")
    p.add_argument("--stat", choices=("median", "min"), default="median",
                   help="how the runs combine: median (default) or min (the best run; steadier on a busy host)")
    p.add_argument("--libs", default="ours,mpi,gloo", help="which of ours,mpi,gloo to run (default all)")
    p.add_argument("--check", action="store_true", help="also verify one call per size in every library")
    p.add_argument("--build-dir", default=os.path.join(ROOT, "build"), help="the CMake build directory")
    p.add_argument("--out-dir", default=None, help="where to write results (default BUILD_DIR/compare)")
    p.add_argument("--mpi-args", default="", help="extra mpirun arguments, e.g. MCA settings (one string)")
    p.add_argument("--sockets", action="store_true",
                   help="TCP on loopback only, as between hosts: libcollective with COLL_TRANSPORTS=^shm, Open MPI "
                   "with --mca btl tcp,self (Gloo always uses TCP); results go to BUILD_DIR/compare-sockets")
    p.add_argument("--timeout", type=int, default=600, help="seconds one launch may take (default 600)")
    p.add_argument("--no-plot", action="store_true", help="skip the PNG")
    p.add_argument("--python", default=DEFAULT_PYTHON,
                   help=f"the interpreter with torch that runs the Gloo ranks (default {DEFAULT_PYTHON})")
    a = p.parse_args()
    try:
        a.ranks = [int(x) for x in a.ranks.split(",")]
        if any(n < 1 for n in a.ranks):
            raise ValueError
    except ValueError:
        p.error(f"--ranks {a.ranks!r}: expected positive integers, comma-separated")
    a.sizes = [8 << k for k in range(24)] if a.sweep else [parse_bytes(s) for s in a.sizes.split(",")]
    a.sizes = [s // 4 * 4 for s in a.sizes]
    a.libs = [x.strip() for x in a.libs.split(",") if x.strip()]
    if any(x not in LIBS for x in a.libs):
        p.error(f"--libs: expected a subset of {','.join(LIBS)}")
    if a.runs < 1 or a.iters < 1 or a.min_iters < 1 or a.min_iters > a.iters:
        p.error("--runs, --iters and --min-iters must be >= 1, and --min-iters <= --iters")
    a.build_dir = os.path.abspath(a.build_dir)
    a.out_dir = os.path.abspath(a.out_dir or os.path.join(a.build_dir, "compare-sockets" if a.sockets else "compare"))
    if a.sockets:
        a.mpi_args = ("--mca btl tcp,self " + a.mpi_args).strip()
    return a


def plan(size, nranks, a):
    """(iters, warmups) for a size: about --budget seconds in Gloo, whose cost on this kind of
    host is roughly 250 us per rank per call plus 1 ns per byte per rank (TCP loopback)."""
    est = 2.5e-4 * nranks + size * nranks / 1e9
    iters = max(a.min_iters, min(a.iters, int(a.budget / est)))
    return iters, max(1, min(a.warmups, iters // 2))


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
        self.perf = os.path.join(a.build_dir, "benchmarks", "perf", "all_reduce_perf")
        if "ours" in a.libs and not os.access(self.perf, os.X_OK):
            self.missing["ours"] = (f"{self.perf} is not built; build libcollective first: "
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
        src = os.path.join(HERE, "mpi_allreduce_bench.c")
        out = os.path.join(work, "mpi_allreduce_bench")
        if not os.path.exists(out) or os.path.getmtime(out) < os.path.getmtime(src):
            p = subprocess.run([mpicc, "-O2", "-o", out, src], capture_output=True, text=True)
            if p.returncode != 0:
                self.missing["mpi"] = "mpicc failed:\n" + p.stderr
                return None
        return out


def run_ours(tools, a, n, sizes, plans):
    results = {}
    for size, (iters, warmups) in zip(sizes, plans):
        cmd = [tools.collrun, "-n", str(n), "--timeout", str(a.timeout), tools.perf, "-b", str(size), "-e", str(size),
               "-n", str(iters), "-w", str(warmups), "-c", "1" if a.check else "0", "-d", "float", "-o", "sum"]
        env = dict(os.environ, COLL_TRANSPORTS="^shm") if a.sockets else None
        res, err = run(cmd, a.timeout + 30, env=env)
        if err:
            return None, err
        for f in rows(res[0], 13):
            if f[8] not in ("0", "N/A"):
                return None, f"all_reduce_perf reported {f[8]} wrong elements at {size} B"
            results[int(f[0])] = float(f[5])
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


def lists(sizes, plans):
    return (",".join(str(s) for s in sizes), ",".join(str(p[0]) for p in plans), ",".join(str(p[1]) for p in plans))


def run_mpi(tools, a, n, sizes, plans):
    s, it, wu = lists(sizes, plans)
    # Bound like ours and Gloo's ranks (collrun's default --bind auto): a core each when they fit.
    binding = "core" if n <= (os.cpu_count() or 1) else "none"
    cmd = ["mpirun", "--oversubscribe", "-np", str(n), "--bind-to", binding, "--timeout", str(a.timeout)]
    if os.geteuid() == 0:
        cmd.insert(1, "--allow-run-as-root")
    cmd += shlex.split(a.mpi_args) + [tools.mpi_bench, "--sizes", s, "--iters", it, "--warmups", wu,
                                      "--check", "1" if a.check else "0"]
    return run_listed(cmd, a)


def run_gloo(tools, a, n, sizes, plans):
    s, it, wu = lists(sizes, plans)
    cmd = [tools.collrun, "-n", str(n), "--timeout", str(a.timeout), a.python,
           os.path.join(HERE, "gloo_allreduce_bench.py"), "--sizes", s, "--iters", it, "--warmups", wu,
           "--check", "1" if a.check else "0"]
    return run_listed(cmd, a)


def busbw(size, n, time_us):
    return size / 1e9 / (time_us * 1e-6) * 2.0 * (n - 1) / n if time_us > 0 else 0.0


def versions(tools):
    v = {"host": platform.node(), "cpus": os.cpu_count(), "python": platform.python_version()}
    try:
        v["openmpi"] = subprocess.run(["mpirun", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    except (OSError, IndexError):
        pass
    try:
        import torch  # noqa: F401 (only its version)
        v["torch"] = torch.__version__
    except ImportError:
        pass
    m = re.search(r"project\(collective\s+VERSION\s+([0-9.]+)", open(os.path.join(ROOT, "CMakeLists.txt")).read())
    v["collective"] = m.group(1) if m else "?"
    return v


def fmt_time(us):
    return f"{us:.2f}" if us < 100 else (f"{us:.1f}" if us < 10000 else f"{us:.0f}")


def fmt_ratio(r):
    return f"{r:.2f}x" if r >= 0.1 else f"{r:.2g}x"


def table(med, n, sizes, libs):
    head = ["size"]
    for lib in libs:
        head += [f"{SHORT[lib]} us", f"{SHORT[lib]} GB/s"]
    others = [lib for lib in libs if lib != "ours"] if "ours" in libs else []
    head += [f"ours/{SHORT[o]}" for o in others]
    body = []
    for size in sizes:
        row = [human(size)]
        for lib in libs:
            t = med.get(lib, {}).get(size)
            row += [fmt_time(t), f"{busbw(size, n, t):.2f}"] if t else ["-", "-"]
        ours = med.get("ours", {}).get(size)
        for o in others:
            t = med.get(o, {}).get(size)
            row.append(fmt_ratio(t / ours) if ours and t else "-")
        body.append(row)
    return head, body


def render_text(head, body):
    widths = [max(len(str(r[i])) for r in [head] + body) for i in range(len(head))]
    lines = ["  ".join(str(c).rjust(w) for c, w in zip(r, widths)) for r in [head] + body]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def render_md(head, body):
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(" ---: " for _ in head) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in body]
    return "\n".join(lines)


def plot(med, a, libs, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import matplotlib.ticker
    except ImportError:
        print("compare: matplotlib is not installed; no plot (tools/install-deps.sh installs it)")
        return False
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 5))
    colors = {"ours": "tab:red", "mpi": "tab:blue", "gloo": "tab:green"}
    styles = ["-", "--", ":", "-."]
    for lib in libs:
        for k, n in enumerate(a.ranks):
            pts = sorted(med.get(lib, {}).get(n, {}).items())
            if not pts:
                continue
            xs = [s for s, _ in pts]
            label = f"{LABELS[lib]}, {n} ranks"
            ax1.plot(xs, [busbw(s, n, t) for s, t in pts], styles[k % 4], color=colors[lib], marker="o", label=label)
            ax2.plot(xs, [t for _, t in pts], styles[k % 4], color=colors[lib], marker="o", label=label)
    short = matplotlib.ticker.FuncFormatter(lambda x, _: human(int(x)).replace(" ", "").replace("i", ""))
    for ax in (ax1, ax2):
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_locator(matplotlib.ticker.LogLocator(base=8))
        ax.xaxis.set_major_formatter(short)
        ax.set_xlabel("size (bytes)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    ax1.set_ylabel("bus bandwidth (GB/s)")
    ax1.set_title("all-reduce float32 sum: busbw (higher is better)")
    ax2.set_yscale("log")
    ax2.set_ylabel("time per call (us)")
    ax2.set_title("time (lower is better)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True


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


def main():
    reexec_for_matplotlib()
    a = parse_args()
    os.makedirs(a.out_dir, exist_ok=True)
    tools = Tools(a)
    for lib, why in tools.missing.items():
        print(f"compare: skipping {LABELS[lib]}: {why}", file=sys.stderr)
    libs = [lib for lib in a.libs if lib not in tools.missing]
    if not libs:
        print("compare: nothing to run", file=sys.stderr)
        return 1
    runners = {"ours": run_ours, "mpi": run_mpi, "gloo": run_gloo}
    raw = {lib: {n: [] for n in a.ranks} for lib in libs}
    errors = []
    load_before = os.getloadavg()
    t_start = time.time()
    for r in range(a.runs):
        for n in a.ranks:
            plans = [plan(s, n, a) for s in a.sizes]
            order = libs[r % len(libs):] + libs[:r % len(libs)]
            for lib in order:
                t0 = time.time()
                res, err = runners[lib](tools, a, n, a.sizes, plans)
                status = "ok" if res else "FAILED"
                print(f"compare: run {r + 1}/{a.runs}, {n} ranks, {LABELS[lib]}: {status} ({time.time() - t0:.1f} s)",
                      flush=True)
                if err:
                    errors.append(f"{LABELS[lib]}, {n} ranks: {err}")
                    print(f"compare: {err}", file=sys.stderr)
                else:
                    raw[lib][n].append(res)
    med = {lib: {n: {} for n in a.ranks} for lib in libs}
    for lib in libs:
        for n in a.ranks:
            for size in a.sizes:
                times = [run[size] for run in raw[lib][n] if size in run]
                if times:
                    med[lib][n][size] = statistics.median(times) if a.stat == "median" else min(times)
    meta = versions(tools)
    meta.update({"command": shlex.join(sys.argv), "runs": a.runs, "load_before": load_before,
                 "load_after": os.getloadavg(), "seconds": round(time.time() - t_start, 1),
                 "plans": {n: {s: plan(s, n, a) for s in a.sizes} for n in a.ranks}, "mpi_args": a.mpi_args})
    transport = " over TCP loopback only (--sockets)" if a.sockets else ""
    md = [f"# All-reduce, float32 sum: libcollective vs Open MPI vs Gloo on {meta['host']}{transport}", "",
          f"Command: `{meta['command']}`; {a.stat} of {a.runs} interleaved runs; load average "
          f"{load_before[0]:.2f} before, {meta['load_after'][0]:.2f} after ({meta['cpus']} CPUs).",
          f"Versions: libcollective {meta['collective']}, {meta.get('openmpi', 'Open MPI ?')}, torch "
          f"{meta.get('torch', '?')} (Gloo). busbw = algbw * 2(n-1)/n. ours/X = X's time / our time "
          "(= our busbw / X's busbw): above 1 means libcollective is faster.", ""]
    print()
    for n in a.ranks:
        head, body = table({lib: med[lib][n] for lib in libs}, n, a.sizes, libs)
        title = (f"{n} ranks, {a.stat} of {a.runs} runs: time per call (us) and busbw (GB/s); ours/X = X's time / "
                 "our time (above 1: ours is faster)")
        print(title)
        print(render_text(head, body))
        print()
        md += [f"## {title}", "", render_md(head, body), ""]
    if errors:
        md += ["## Failures", ""] + [f"- {e.splitlines()[0]}" for e in errors]
    with open(os.path.join(a.out_dir, "results.json"), "w") as f:
        json.dump({"meta": meta, "sizes": a.sizes, "ranks": a.ranks, "raw_time_us": raw, "stat": a.stat, "time_us": med,
                   "errors": errors}, f, indent=1)
    with open(os.path.join(a.out_dir, "results.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    png = os.path.join(a.out_dir, "allreduce.png")
    plotted = not a.no_plot and plot(med, a, libs, png)
    print(f"compare: load average {load_before[0]:.2f} before, {meta['load_after'][0]:.2f} after; "
          f"{meta['seconds']} s in all")
    print(f"compare: wrote {a.out_dir}/results.json, results.md" + (", allreduce.png" if plotted else ""))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
