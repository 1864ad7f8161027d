#!/usr/bin/env python3
"""torch.distributed.all_reduce through the "collective" backend and through "gloo", same run.

Both backends live in one job: the default group is Gloo and a second group over the same ranks
is libcollective (new_group(backend="collective")). For each size the two are timed --runs
times, alternating which goes first, each run being warm-up calls, a barrier, then --iters calls
back to back (average per call, maximum over ranks); the medians are compared. busbw = algbw *
2(n-1)/n, as nccl-tests reports all-reduce. float32 sum, in place, CPU tensors.

    PYTHONPATH=build/python collrun -n 2 /usr/bin/python3 benchmarks/compare/torch_allreduce_bench.py

Prints one row per size and, last, `ratio gloo/collective at <size>: <x>` for the largest size.
"""
import argparse
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist

try:
    import torch_collective  # noqa: F401  (registers the "collective" backend)
except ImportError as error:
    # The extension is built per torch line, each into its own folder.
    raise SystemExit(f"{os.path.basename(sys.argv[0])}: cannot import torch_collective ({error}) under torch "
                     f"{torch.__version__}: run it with PYTHONPATH=build/python (Debian's torch 1.13) or "
                     f"PYTHONPATH=build/python/torch2.15 (the environment tools/install-deps.sh makes)")


def parse_bytes(text):
    text = text.strip().upper().rstrip("B")
    for suffix, scale in (("K", 1 << 10), ("M", 1 << 20), ("G", 1 << 30)):
        if text.endswith(suffix):
            return int(text[:-1]) * scale
    return int(text)


def join_both_backends(program):
    """Both backends over the launcher's ranks (collrun): the default group is gloo, the second
    one is ours. Returns ({"collective": group, "gloo": group}, rank, ranks)."""
    for variable in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        if variable not in os.environ:
            raise SystemExit(f"{program}: {variable} is not set; start it with collrun -n N")
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    groups = {"collective": dist.new_group(backend="collective"), "gloo": dist.group.WORLD}
    return groups, dist.get_rank(), dist.get_world_size()


def time_all_reduce(tensor, group, iters, warmups):
    """Seconds per call: the average over `iters` calls, the maximum over the ranks."""
    for _ in range(warmups):
        dist.all_reduce(tensor, group=group)
    tensor.zero_()  # in place: keep the values from growing during the timed calls
    dist.barrier(group=group)
    start = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(tensor, group=group)
    seconds = torch.tensor([(time.perf_counter() - start) / iters], dtype=torch.float64)
    dist.all_reduce(seconds, op=dist.ReduceOp.MAX)  # on the default (Gloo) group, outside the timing
    return seconds.item()


def check_all_reduce(group, count, rank, ranks):
    tensor = torch.full((count,), float(rank + 1))
    dist.all_reduce(tensor, group=group)
    expected = ranks * (ranks + 1) / 2
    if not bool((tensor == expected).all()):
        raise SystemExit(f"torch_allreduce_bench: wrong all_reduce result on rank {rank}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="16M", help="bytes, comma-separated (K/M/G suffixes; default 16M)")
    parser.add_argument("--runs", type=int, default=7, help="alternating runs per backend (default 7)")
    parser.add_argument("--iters", type=int, default=10, help="timed calls per run (default 10)")
    parser.add_argument("--warmups", type=int, default=3, help="untimed calls before each run (default 3)")
    parser.add_argument("--verbose", action="store_true", help="also print every run's time")
    args = parser.parse_args()
    groups, rank, ranks = join_both_backends("torch_allreduce_bench")
    bus_factor = 2 * (ranks - 1) / ranks
    if rank == 0:
        print(f"# torch_allreduce_bench: torch {torch.__version__}, {ranks} ranks, float32 sum all_reduce in place; "
              f"median of {args.runs} alternating runs of {args.iters} calls")
        print("# %10s  %14s  %10s  %16s  %10s  %16s" % ("size(B)", "collective(us)", "gloo(us)", "busbw coll(GB/s)",
                                                     "ratio", "busbw gloo(GB/s)"), flush=True)
    ratio = None
    for size in [parse_bytes(s) for s in args.sizes.split(",")]:
        count = max(size // 4, 1)
        for group in groups.values():
            check_all_reduce(group, count, rank, ranks)
        tensor = torch.zeros(count)
        seconds = {name: [] for name in groups}
        for run in range(args.runs):
            order = list(groups) if run % 2 == 0 else list(reversed(groups))
            for name in order:
                seconds[name].append(time_all_reduce(tensor, groups[name], args.iters, args.warmups))
        median = {name: statistics.median(values) for name, values in seconds.items()}
        ratio = median["gloo"] / median["collective"]
        busbw = {name: count * 4 / value * bus_factor / 1e9 for name, value in median.items()}
        if rank == 0 and args.verbose:
            for name, values in seconds.items():
                print(f"# {count * 4} B, {name}, every run (us): " + " ".join(f"{v * 1e6:.0f}" for v in values))
        if rank == 0:
            print("  %10d  %14.1f  %10.1f  %16.2f  %9.1fx  %16.2f" % (
                count * 4, median["collective"] * 1e6, median["gloo"] * 1e6, busbw["collective"], ratio,
                busbw["gloo"]), flush=True)
    if rank == 0:
        print(f"ratio gloo/collective at {count * 4} B: {ratio:.1f}x")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
