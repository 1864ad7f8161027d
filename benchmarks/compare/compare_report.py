"""compare.py's output: the tables (text and markdown), the per-collective pages and plots, and
results.json, from the combined times. Every ratio is the peer's time divided by ours, so above 1
means libcollective is faster (the same as our busbw divided by the peer's)."""
import json
import math
import os
import statistics

from collectives import COLLECTIVES, MISSING, REDUCING, ROOTED, busbw, effective_size

LABELS = {"ours": "libcollective", "mpi": "Open MPI", "gloo": "Gloo"}
SHORT = {"ours": "ours", "mpi": "MPI", "gloo": "Gloo"}
RATIO_NOTE = "ours/X = X's time / our time (= our busbw / X's busbw): above 1 means libcollective is faster"


def human(size):
    for unit, s in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= s and size % s == 0:
            return f"{size // s} {unit}"
    return f"{size} B"


def fmt_time(us):
    return f"{us:.2f}" if us < 100 else (f"{us:.1f}" if us < 10000 else f"{us:.0f}")


def fmt_ratio(r):
    return f"{r:.2f}x" if r >= 0.1 else f"{r:.2g}x"


def ratio(med, peer, size):
    """The peer's time / ours at one size, or None when either is missing."""
    ours, theirs = med.get("ours", {}).get(size), med.get(peer, {}).get(size)
    return theirs / ours if ours and theirs else None


def offered(lib, coll):
    return (lib, coll) not in MISSING


def table(med, coll, n, sizes, libs):
    """One collective at one rank count. med: {lib: {size: time_us}}; sizes: the sizes measured."""
    head = ["size"]
    for lib in libs:
        head += [f"{SHORT[lib]} us", f"{SHORT[lib]} GB/s"]
    peers = [lib for lib in libs if lib != "ours"] if "ours" in libs else []
    head += [f"ours/{SHORT[p]}" for p in peers]
    body = []
    for size in sizes:
        row = [human(size)]
        for lib in libs:
            t = med.get(lib, {}).get(size)
            if not offered(lib, coll):
                row += ["n/a", "n/a"]
            else:
                row += [fmt_time(t), f"{busbw(coll, size, n, t):.2f}"] if t else ["-", "-"]
        for p in peers:
            r = ratio(med, p, size)
            row.append("n/a" if not offered(p, coll) else (fmt_ratio(r) if r else "-"))
        body.append(row)
    return head, body


def summary(med_by_coll, colls, n, requested, peer):
    """Ratios against one peer: a row per requested size, a column per collective; cells where
    the peer is faster are bold."""
    return ratio_table(colls, n, requested, peer, lambda c, size: ratio(per_rank(med_by_coll[c], n), peer, size))


def ratio_table(colls, n, requested, peer, cell_ratio):
    """A row per requested size, a column per collective, each cell cell_ratio(coll, measured
    size) against `peer` (None: not measured), bold below 1."""
    head = ["size"] + colls
    body = []
    for size in requested:
        row = [human(size)]
        for c in colls:
            r = cell_ratio(c, effective_size(c, size, n))
            if not offered(peer, c):
                row.append("n/a")
            else:
                row.append("-" if r is None else (f"**{fmt_ratio(r)}**" if r < 1 else fmt_ratio(r)))
        body.append(row)
    return head, body


def paired_ratios(raw_coll, n, peer, size):
    """Run r's peer time / run r's ours time at one size, for every run that measured both (the
    two within seconds of each other in the same round)."""
    ours = raw_coll.get("ours", {}).get(n, [])
    theirs = raw_coll.get(peer, {}).get(n, [])
    return [t[size] / o[size] for o, t in zip(ours, theirs) if o.get(size) and t.get(size)]


def paired_ratio(raw_coll, n, peer, size):
    """The median of paired_ratios(), or None. On a machine whose speed drifts from minute to
    minute, this compares each pair under the same conditions, where the ratio of the two medians
    can pair a fast phase of one library with a slow phase of the other."""
    ratios = paired_ratios(raw_coll, n, peer, size)
    return statistics.median(ratios) if ratios else None


def median_interval(values, level=0.95):
    """A confidence interval for the median of the distribution `values` were drawn from, assuming
    nothing about its shape (the sign test's: the k-th smallest and k-th largest values, with k
    the largest for which a fair coin gives fewer than k heads in len(values) tosses with
    probability at most (1 - level) / 2). Returns (low, high, coverage), coverage being the
    interval's exact probability (at least `level` where the runs allow it; with fewer than 6 runs
    no interval reaches 95%, and the widest one, min to max, is returned with its lower coverage)."""
    xs = sorted(values)
    n = len(xs)
    if n == 0:
        return None
    tail = (1.0 - level) / 2

    def heads_below(k):  # P(fewer than k heads in n tosses of a fair coin)
        return sum(math.comb(n, j) for j in range(k)) / 2**n

    k = 1
    while k + 1 <= (n + 1) // 2 and heads_below(k + 1) <= tail:
        k += 1
    return xs[k - 1], xs[n - k], 1.0 - 2 * heads_below(k)


def interval_verdict(raw_by_coll, colls, n, requested, peer, level=0.95):
    """Counts the cells whose paired ratio's interval (median_interval) lies wholly above 1, holds
    1, or lies wholly below; returns (above, holds, below, [(coll, size, median, low, high), ...]
    for every cell whose interval reaches below 1)."""
    above, holds, below, near = 0, 0, 0, []
    for c in colls:
        if not offered(peer, c):
            continue
        for size in requested:
            measured = effective_size(c, size, n)
            ratios = paired_ratios(raw_by_coll[c], n, peer, measured)
            if not ratios:
                continue
            low, high, _ = median_interval(ratios, level)
            if low > 1:
                above += 1
                continue
            if high < 1:
                below += 1
            else:
                holds += 1
            near.append((c, measured, statistics.median(ratios), low, high))
    return above, holds, below, near


def paired_summary(raw_by_coll, colls, n, requested, peer):
    """As summary(), from paired_ratio()."""
    return ratio_table(colls, n, requested, peer, lambda c, size: paired_ratio(raw_by_coll[c], n, peer, size))


def interval_section(raw_by_coll, colls, n, requested, peer):
    """results.md's account of how sure each paired ratio is (interval_verdict): the counts, and
    a row for every cell whose interval reaches below 1."""
    above, holds, below, near = interval_verdict(raw_by_coll, colls, n, requested, peer)
    runs = max((len(raw_by_coll[c].get("ours", {}).get(n, [])) for c in colls), default=0)
    coverage = median_interval(range(runs))[2] if runs else 0
    md = [f"## How sure: the paired ratios' intervals against {LABELS[peer]}, {n} ranks", "",
          f"For each cell, the interval that holds the median of the paired ratio ({SHORT[peer]} time / ours "
          f"in the same run) with {coverage:.1%} confidence over {runs} runs, assuming nothing of the ratios' "
          "distribution (the sign test's interval: the k-th smallest to the k-th largest ratio). "
          f"**{above}** cells lie wholly above 1 (libcollective faster), **{holds}** hold 1 (the runs cannot tell "
          f"the two apart), **{below}** lie wholly below 1 ({LABELS[peer]} faster).", ""]
    if near:
        body = [[c, human(size), fmt_ratio(m), f"{fmt_ratio(low)} - {fmt_ratio(high)}"]
                for c, size, m, low, high in near]
        md += [render_md(["collective", "size", "paired median", "interval"], body), ""]
    return md


def per_rank(med_coll, n):
    """{lib: {n: {size: t}}} -> {lib: {size: t}} for one rank count."""
    return {lib: by_n.get(n, {}) for lib, by_n in med_coll.items()}


def render_text(head, body):
    widths = [max(len(str(r[i])) for r in [head] + body) for i in range(len(head))]
    lines = ["  ".join(str(c).rjust(w) for c, w in zip(r, widths)) for r in [head] + body]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def render_md(head, body):
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(" ---: " for _ in head) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in body]
    return "\n".join(lines)


def describe(coll, libs):
    """What a size means and what each library calls, and the operations a library lacks."""
    c = COLLECTIVES[coll]
    calls = {"ours": f"{coll}_perf (out of place)", "mpi": c.mpi, "gloo": c.gloo and f"torch.distributed {c.gloo}"}
    kind = "float32" + (" sum" if coll in REDUCING else "") + (", root 0" if coll in ROOTED else "")
    lines = [f"Size = {c.size_means}; {kind}; busbw = algbw * {c.factor_text} (nccl-tests)."]
    for lib in libs:
        if offered(lib, coll):
            lines.append(f"{LABELS[lib]}: {calls[lib]}.")
        else:
            lines.append(f"{LABELS[lib]}: not offered ({MISSING[(lib, coll)]}).")
    return " ".join(lines)


def collective_section(coll, med_coll, ranks, sizes_for, libs, stat, runs, level="##"):
    """Markdown (and the same tables as text on stdout) for one collective at every rank count."""
    md = [f"{level} {coll}", "", describe(coll, libs), ""]
    for n in ranks:
        head, body = table(per_rank(med_coll, n), coll, n, sizes_for(coll, n), libs)
        title = f"{coll}, {n} ranks, {stat} of {runs} runs: time per call (us) and busbw (GB/s)"
        print(title)
        print(render_text(head, body))
        print()
        md += [f"{level}# {title}", "", render_md(head, body), ""]
    return md


def plot(coll, med_coll, ranks, libs, path, where):
    """busbw and time against size, per library and rank count; False without matplotlib."""
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
        for k, n in enumerate(ranks):
            pts = sorted(med_coll.get(lib, {}).get(n, {}).items())
            if not pts:
                continue
            xs = [s for s, _ in pts]
            label = f"{LABELS[lib]}, {n} ranks"
            ax1.plot(xs, [busbw(coll, s, n, t) for s, t in pts], styles[k % 4], color=colors[lib], marker="o",
                     label=label)
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
    ax1.set_title(f"{coll} float32{where}: busbw (higher is better)")
    ax2.set_yscale("log")
    ax2.set_ylabel("time per call (us)")
    ax2.set_title("time (lower is better)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def write(out_dir, med, raw, meta, a, libs, sizes_for, errors, transport):
    """results.md (every table), results.json, and <coll>.md and <coll>.png per collective.
    med and raw: {coll: {lib: {n: ...}}}."""
    where = " over TCP loopback only" if transport == "sockets" else ""
    heading = " vs ".join(LABELS[lib] for lib in libs)
    how = [f"Command: `{meta['command']}`; {a.stat} of {a.runs} interleaved runs; load average "
           f"{meta['load_before'][0]:.2f} before, {meta['load_after'][0]:.2f} after ({meta['cpus']} CPUs).",
           f"Versions: libcollective {meta['collective']}, {meta.get('openmpi', 'Open MPI ?')}, torch "
           f"{meta.get('torch', '?')} (Gloo). {RATIO_NOTE}.",
           f"Calls per size: about {a.budget} s in the slowest library, "
           + ("by a calibration run's time per call" if meta.get("calibrated") else "by a model of the libraries' speed")
           + f", at most {a.iters}; results.json lists each size's (calls, warm-ups) under plans."]
    md = [f"# {heading}, float32{where}", ""] + how + [""]
    peers = [p for p in libs if p != "ours"] if "ours" in libs and len(a.colls) > 1 else []
    for p in peers:
        for n in a.ranks:
            head, body = summary(med, a.colls, n, a.sizes, p)
            md += [f"## {SHORT[p]}'s time / ours, {n} ranks (bold: {LABELS[p]} is faster)", "",
                   render_md(head, body), ""]
    for p in peers if a.runs > 1 else []:
        for n in a.ranks:
            head, body = paired_summary(raw, a.colls, n, a.sizes, p)
            md += [f"## Paired: the median of each run's {SHORT[p]} time / ours, {n} ranks (bold: below 1)", "",
                   "Each run measures both libraries within seconds of each other; the median of those "
                   "per-run ratios compares them under the same machine conditions, where the tables above "
                   "divide one library's median by the other's, which may come from different phases of a "
                   "machine whose speed drifts.", "", render_md(head, body), ""]
    for p in peers if a.runs > 1 else []:
        for n in a.ranks:
            md += interval_section(raw, a.colls, n, a.sizes, p)
    if peers and any(effective_size(c, s, n) != s for c in a.colls for s in a.sizes for n in a.ranks):
        md += ["Sizes the rank count does not divide into whole float32 blocks are measured rounded as the "
               "collective's own table shows (at least one element per rank).", ""]
    plotted = []
    for coll in a.colls:
        section = collective_section(coll, med[coll], a.ranks, sizes_for, libs, a.stat, a.runs)
        md += section
        page = [f"# {coll}: {heading}{where}", ""] + how + [""] + section[2:]
        if not a.no_plot and plot(coll, med[coll], a.ranks, libs, os.path.join(out_dir, f"{coll}.png"), where):
            page[5:5] = [f"![busbw and time against size]({coll}.png)", ""]
            plotted.append(f"{coll}.png")
        with open(os.path.join(out_dir, f"{coll}.md"), "w") as f:
            f.write("\n".join(page) + "\n")
    if errors:
        md += ["## Failures", ""] + [f"- {e.splitlines()[0]}" for e in errors]
    with open(os.path.join(out_dir, "results.json"), "w") as f:
        json.dump({"meta": meta, "sizes": a.sizes, "ranks": a.ranks, "colls": a.colls, "transport": transport,
                   "stat": a.stat, "raw_time_us": raw, "time_us": med, "errors": errors}, f, indent=1)
    with open(os.path.join(out_dir, "results.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    return ["results.json", "results.md"] + [f"{c}.md" for c in a.colls] + plotted
