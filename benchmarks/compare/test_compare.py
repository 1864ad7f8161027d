#!/usr/bin/env python3
"""Checks compare.py's arithmetic without running anything: the ratio's direction, the sizes each
collective measures, the busbw factors, the options, the paired ratios' intervals, and that
mpi_bench.c's table of collectives agrees with collectives.py. Run by ctest (compare.unit)."""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import compare  # noqa: E402
import compare_report  # noqa: E402
from collectives import COLLECTIVES, MISSING, busbw, effective_size  # noqa: E402


def check_ratio_direction():
    # The peer taking twice our time means we are twice as fast: ratio 2, not 0.5.
    med = {"ours": {8: 1.0, 64: 4.0}, "mpi": {8: 2.0, 64: 2.0}}
    head, body = compare_report.table(med, "broadcast", 2, [8, 64], ["ours", "mpi"])
    assert head[-1] == "ours/MPI", head
    assert [r[-1] for r in body] == ["2.00x", "0.50x"], body
    by_coll = {"broadcast": {lib: {2: t} for lib, t in med.items()}}
    _, rows = compare_report.summary(by_coll, ["broadcast"], 2, [8, 64], "mpi")
    assert [r[1] for r in rows] == ["2.00x", "**0.50x**"], rows  # bold where the peer is faster


def check_missing_operation():
    assert ("gloo", "reduce_scatter") in MISSING
    med = {"ours": {64: 1.0}, "mpi": {64: 1.0}}
    head, body = compare_report.table(med, "reduce_scatter", 2, [64], ["ours", "mpi", "gloo"])
    assert body[0][head.index("Gloo us")] == "n/a" and body[0][-1] == "n/a", body


def check_sizes_and_factors():
    assert effective_size("all_reduce", 8, 4) == 8
    assert effective_size("all_gather", 8, 4) == 16  # at least one float32 per rank
    assert effective_size("scatter", 100, 3) == 96  # whole blocks
    assert compare.measured_sizes("gather", 4, [8, 16, 64]) == [16, 64]
    factors = {"all_reduce": 1.0, "all_gather": 0.5, "alltoall": 0.5, "broadcast": 1.0, "gather": 0.5, "reduce": 1.0,
               "reduce_scatter": 0.5, "scatter": 0.5, "sendrecv": 1.0}  # at 2 ranks, as nccl-tests
    for name, want in factors.items():
        assert abs(busbw(name, 10**9, 2, 1e6) - want) < 1e-12, name  # 1 GB in 1 s


def check_options():
    a = compare.parse_args([])
    assert a.colls == list(COLLECTIVES) and a.transports == ["shm"] and a.out_dir.endswith("compare")
    a = compare.parse_args(["--sockets", "--colls", "gather,all_reduce"])
    assert a.colls == ["all_reduce", "gather"] and a.transports == ["sockets"] and a.out_dir.endswith("compare-sockets")
    assert compare.mpi_args(a, "sockets").startswith("--mca btl tcp,self")
    a = compare.parse_args(["--transports", "shm,sockets", "--out-dir", "/tmp/o", "--sweep"])
    assert a.out_dirs == {"shm": "/tmp/o", "sockets": "/tmp/o/sockets"} and a.sizes[0] == 8 and a.sizes[-1] == 64 << 20
    assert a.calibrate and not compare.parse_args(["--no-calibrate"]).calibrate
    # By default the budget, not the caps, sets a small call's iterations: 0.3 us a call fills it
    # (design value)
    a = compare.parse_args([])
    iters, warmups = compare.plan_for_call_time(3e-7, a, a.budget)
    assert iters * 3e-7 >= 0.9 * a.budget and warmups == 50, (iters, warmups)


def check_calibrated_plans():
    # The measured time per call sets the iterations: 0.5 s at 1 ms a call is 500 calls, clamped to
    # --min-iters and --iters, with at most --warmups warm-ups and never more than half the calls.
    # (design value)
    a = compare.parse_args(["--budget", "0.5", "--iters", "2000", "--min-iters", "5", "--warmups", "50"])
    assert compare.plan_for_call_time(1e-3, a, a.budget) == (500, 50)
    assert compare.plan_for_call_time(1e-7, a, a.budget) == (2000, 50)
    assert compare.plan_for_call_time(1.0, a, a.budget) == (5, 2)
    assert compare.plan_for_call_time(0.0, a, a.budget) == (2000, 50)
    # The model's plan for the calibration run is a fifth of the counted runs' (fewer calls).
    probe, counted = compare.plan(1 << 20, 2, a, "shm", a.budget * compare.CALIBRATION_SHARE), compare.plan(
        1 << 20, 2, a, "shm")
    assert probe[0] < counted[0], (probe, counted)


def check_mpi_table_agrees():
    source = open(os.path.join(HERE, "mpi_bench.c")).read()
    rows = re.findall(r"\{\s*\"(\w+)\",\s*(\d),\s*(ONE|BLOCKS|TWICE)\s*\}", source)
    factor = {"ONE": 1.0, "BLOCKS": 0.5, "TWICE": 1.0}
    assert [r[0] for r in rows] == list(COLLECTIVES), rows
    for name, split, f in rows:
        assert bool(int(split)) == COLLECTIVES[name].split, name
        assert factor[f] == COLLECTIVES[name].factor(2), name


def check_median_interval():
    # 7 runs: no pair of order statistics inside the extremes reaches 95%; min..max covers 1 - 2/2^7.
    low, high, coverage = compare_report.median_interval([5, 1, 7, 3, 2, 6, 4])
    assert (low, high) == (1, 7) and abs(coverage - (1 - 2 / 128)) < 1e-12, (low, high, coverage)
    # 15 runs: the 4th smallest and 4th largest (P(at most 3 heads in 15) = 576/32768 <= 2.5%).
    low, high, coverage = compare_report.median_interval(list(range(15, 0, -1)))
    assert (low, high) == (4, 12) and abs(coverage - (1 - 2 * 576 / 32768)) < 1e-12, (low, high, coverage)
    # One run per library at 2 ranks for two cells: each run is its own pair.
    runs = {"ours": {2: [{8: 1.0, 64: 2.0}] * 7}, "mpi": {2: [{8: 1.5, 64: 1.0}] * 6 + [{8: 0.9, 64: 1.0}]}}
    above, holds, below, near = compare_report.interval_verdict({"broadcast": runs}, ["broadcast"], 2, [8, 64], "mpi")
    assert (above, holds, below) == (0, 1, 1), (above, holds, below)
    assert [(c, size) for c, size, *_ in near] == [("broadcast", 8), ("broadcast", 64)], near
    assert near[0][3] == 0.9 and near[1][4] == 0.5, near


def main():
    for check in (check_ratio_direction, check_missing_operation, check_sizes_and_factors, check_options,
                  check_calibrated_plans, check_mpi_table_agrees, check_median_interval):
        check()
        print(f"ok: {check.__name__}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
