#!/usr/bin/env python3
"""Small calls through torch.distributed on the "collective" backend and on "gloo", same run.

    PYTHONPATH=build/python/torch2.15 build/tools/collrun/collrun -n 2 /opt/collective-py/bin/python \\
        benchmarks/compare/torch_small_calls.py
    PYTHONPATH=build/python build/tools/collrun/collrun -n 2 /usr/bin/python3 benchmarks/compare/torch_small_calls.py

What issue 49 asks of the backend, each cell ours beside gloo's in one job (the default group is
gloo, a second group over the same ranks is ours), float32 CPU tensors:

  sync      an 8-byte all_reduce, waited for before the next (per call)
  async     8-byte all_reduces issued with async_op=True in batches of --batch, then each waited
            for (per call)
  sendrecv  a 16-byte round trip: rank 2i sends to rank 2i+1, which receives and sends it back
            (per round trip; with an odd number of ranks the last one idles)
  any       the same round trip where the receives name no source (recv from any source)
  large     all_reduce of each --sizes (per call), for the bandwidth and its ratio to gloo

Each cell is --rounds rounds per backend, alternating which goes first; a round is --warmups
calls, a barrier, then calls for about --seconds (at least --min-iters), averaged, the maximum
over ranks. The table has each cell's median over rounds (microseconds) and gloo's time over
ours; the last lines compare ours with the targets of issue 49 (sync <= 5 us, async <= 2 us, a
round trip <= 10 us, 16 MiB >= 3x gloo). On torch 2.x a third column, "torch alone", times the
small cells on torch's "fake" backend, which moves nothing and returns completed Works: what
torch's own Python and dispatcher cost per call, the floor under any backend's small calls.
"""
import argparse
import statistics
import time

import torch
import torch.distributed as dist

from torch_allreduce_bench import join_both_backends, parse_bytes  # also registers "collective"

TARGETS = {"sync": ("<=", 5.0), "async": ("<=", 2.0), "sendrecv": ("<=", 10.0)}
LARGE_TARGET_BYTES, LARGE_TARGET_RATIO = 16 << 20, 3.0


class Cell:
    """One measured operation: `call(group, iters)` runs `iters` of it; `per` divides the time."""

    def __init__(self, name, call, label):
        self.name, self.call, self.label = name, call, label


def all_reduce_sync(tensor):
    def call(group, iters):
        for _ in range(iters):
            dist.all_reduce(tensor, group=group)
    return call


def all_reduce_async(tensor, batch):
    def call(group, iters):
        left = iters
        while left > 0:
            works = [dist.all_reduce(tensor, group=group, async_op=True) for _ in range(min(batch, left))]
            for work in works:
                work.wait()
            left -= len(works)
    return call


def round_trip(tensor, rank, ranks, any_source):
    partner = rank + 1 if rank % 2 == 0 else rank - 1
    active = partner < ranks

    def call(group, iters):
        if not active:
            return
        source = None if any_source else partner
        for _ in range(iters):
            if rank % 2 == 0:
                dist.send(tensor, dst=partner, group=group)
                got = dist.recv(tensor, src=source, group=group)
            else:
                got = dist.recv(tensor, src=source, group=group)
                dist.send(tensor, dst=partner, group=group)
            if any_source and got != partner:
                raise SystemExit(f"torch_small_calls: rank {rank} received from {got}, expected {partner}")
    return call


def timed_round(cell, group, iters, warmups):
    """Seconds per call of one round: the average over its calls, the maximum over the ranks."""
    cell.call(group, warmups)
    dist.barrier(group=group)
    start = time.perf_counter()
    cell.call(group, iters)
    seconds = torch.tensor([(time.perf_counter() - start) / iters], dtype=torch.float64)
    dist.all_reduce(seconds, op=dist.ReduceOp.MAX)  # on the default (gloo) group, outside the timing
    return seconds.item()


def iterations_for(cell, group, args):
    """Calls per round on one backend: about --seconds, measured once, the same on every rank. Each
    backend gets its own count, so that a fast one's rounds are not a few milliseconds long (one
    descheduling would then decide them)."""
    estimate = timed_round(cell, group, args.min_iters, 1)
    iters = torch.tensor([max(args.min_iters, int(args.seconds / max(estimate, 1e-9)))], dtype=torch.int64)
    dist.all_reduce(iters, op=dist.ReduceOp.MIN)
    return int(iters.item())


def torch_alone_group():
    """A group on torch's "fake" backend (torch 2.x), or None where torch has none."""
    try:
        import torch.testing._internal.distributed.fake_pg  # noqa: F401  (registers "fake")
        return dist.new_group(backend="fake")
    except (ImportError, AssertionError, RuntimeError, ValueError):
        return None


def check_values(groups, rank, ranks):
    expected = ranks * (ranks + 1) / 2
    for name, group in groups.items():
        tensor = torch.full((2,), float(rank + 1))
        dist.all_reduce(tensor, group=group)
        if not bool((tensor == expected).all()):
            raise SystemExit(f"torch_small_calls: {name}: wrong all_reduce result on rank {rank}: {tensor}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cells", default="sync,async,sendrecv,any,large",
                        help="which cells, comma-separated (default: all of sync,async,sendrecv,any,large)")
    parser.add_argument("--sizes", default="1M,4M,16M,64M", help="the large cell's sizes in bytes (K/M/G suffixes)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds per backend and cell (default 5)")
    parser.add_argument("--seconds", type=float, default=0.2, help="about this long per round (default 0.2)")
    parser.add_argument("--min-iters", type=int, default=4, help="at least this many calls per round (default 4)")
    parser.add_argument("--warmups", type=int, default=3, help="untimed calls before each round (default 3)")
    parser.add_argument("--batch", type=int, default=32, help="async calls issued before waiting (default 32)")
    parser.add_argument("--verbose", action="store_true", help="also print every round's time")
    args = parser.parse_args()
    groups, rank, ranks = join_both_backends("torch_small_calls")
    floor = torch_alone_group()
    check_values(groups, rank, ranks)
    wanted = args.cells.split(",")
    cells = []
    small = torch.zeros(2)  # 8 bytes
    message = torch.zeros(4)  # 16 bytes
    if "sync" in wanted:
        cells.append(Cell("sync", all_reduce_sync(small), "8 B all_reduce, sync"))
    if "async" in wanted:
        cells.append(Cell("async", all_reduce_async(small, args.batch), f"8 B all_reduce, async x{args.batch}"))
    if "sendrecv" in wanted and ranks > 1:
        cells.append(Cell("sendrecv", round_trip(message, rank, ranks, False), "16 B send/recv round trip"))
    if "any" in wanted and ranks > 1:
        cells.append(Cell("any", round_trip(message, rank, ranks, True), "16 B round trip, recv any source"))
    if "large" in wanted:
        for size in [parse_bytes(s) for s in args.sizes.split(",")]:
            tensor = torch.zeros(max(size // 4, 1))
            cells.append(Cell(f"large{size}", all_reduce_sync(tensor), f"{size} B all_reduce"))

    if rank == 0:
        print(f"# torch_small_calls: torch {torch.__version__}, {ranks} ranks; median of {args.rounds} alternating "
              f"rounds of about {args.seconds} s; microseconds per call")
        print("# %-36s %12s %12s %10s %12s" % ("cell", "collective", "gloo", "gloo/ours",
                                               "torch alone" if floor is not None else ""), flush=True)
    medians = {}
    for cell in cells:
        iters = {name: iterations_for(cell, group, args) for name, group in groups.items()}
        seconds = {name: [] for name in groups}
        for round_index in range(args.rounds):
            order = list(groups) if round_index % 2 == 0 else list(reversed(groups))
            for name in order:
                seconds[name].append(timed_round(cell, groups[name], iters[name], args.warmups))
        median = {name: statistics.median(values) * 1e6 for name, values in seconds.items()}
        medians[cell.name] = median
        alone = ""
        if floor is not None and cell.name in ("sync", "async", "sendrecv"):
            alone = "%12.2f" % (statistics.median(timed_round(cell, floor, iters["collective"], args.warmups)
                                                  for _ in range(args.rounds)) * 1e6)
        if rank == 0:
            if args.verbose:
                for name, values in seconds.items():
                    print(f"# {cell.label}, {name}, {iters[name]} calls a round: " +
                          " ".join(f"{v * 1e6:.2f}" for v in values))
            print("  %-36s %12.2f %12.2f %9.1fx %s" % (cell.label, median["collective"], median["gloo"],
                                                       median["gloo"] / median["collective"], alone), flush=True)
    if rank == 0:
        for name, (_, limit) in TARGETS.items():
            if name in medians:
                ours = medians[name]["collective"]
                print(f"target {name}: ours {ours:.2f} us, at most {limit} us: {'met' if ours <= limit else 'NOT met'}")
        large = medians.get(f"large{LARGE_TARGET_BYTES}")
        if large:
            ratio = large["gloo"] / large["collective"]
            print(f"target 16 MiB all_reduce: {ratio:.1f}x gloo, at least {LARGE_TARGET_RATIO}x: "
                  f"{'met' if ratio >= LARGE_TARGET_RATIO else 'NOT met'}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
