#!/usr/bin/env python3
"""One collective through Gloo (torch.distributed, backend "gloo"), timed like the *_perf
programs: per size, warm-up calls, a barrier, then `iters` calls back to back; the time is the
average per call, the maximum over ranks. Float32, sum, root 0; sizes mean what they mean for our
perf programs (collectives.py). torch's all_reduce, reduce and broadcast work in place.

Start it under a launcher that sets RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT:

    collrun -n 2 /usr/bin/python3 gloo_bench.py --coll gather --sizes 8,64K --iters 1000,200

Output: '#' comment lines, then one row per size with the columns
    size(B) count iters time(us) algbw(GB/s) busbw(GB/s) #wrong
(size: the size measured; busbw = algbw times the collective's nccl-tests factor; #wrong is -1
when not checked). Exit status 3 when Gloo has no such operation (reduce_scatter in torch 1.13).
"""
import argparse
import os
import sys
import time

from collectives import COLLECTIVES, MISSING, block_count, busbw
from compare import parse_bytes

ROOT = 0


def per_size(values, nsizes, name):
    items = [int(v) for v in values.split(",")]
    if len(items) == 1:
        return items * nsizes
    if len(items) != nsizes:
        raise SystemExit(f"gloo_bench: --{name} needs one value or one per size")
    return items


def make_call(coll, send, recv, per, rank, n):
    """A function making one call on these buffers (views prepared here, outside the timing), and
    the tensor holding this rank's output. The in-place operations take their input in `recv`."""
    import torch.distributed as dist
    blocks = list(recv.split(per)) if COLLECTIVES[coll].split else None
    send_blocks = list(send.split(per)) if coll == "scatter" and rank == ROOT else None
    calls = {
        "all_reduce": lambda: dist.all_reduce(recv),
        "reduce": lambda: dist.reduce(recv, dst=ROOT),
        "broadcast": lambda: dist.broadcast(recv, src=ROOT),
        "all_gather": lambda: dist.all_gather(blocks, send[:per]),
        "gather": lambda: dist.gather(send[:per], gather_list=blocks if rank == ROOT else None, dst=ROOT),
        "scatter": lambda: dist.scatter(recv[:per], scatter_list=send_blocks, src=ROOT),
        "alltoall": lambda: dist.all_to_all_single(recv, send),
        "sendrecv": lambda: [r.wait() for r in (dist.isend(send, (rank + 1) % n), dist.irecv(recv, (rank - 1) % n))],
    }
    return calls[coll]


def expected(coll, torch, count, per, rank, n):
    """(output length, its expected values) with input element i of rank r = (5i + 3r) % 9."""
    def value(r, i):
        return ((i * 5 + r * 3) % 9).to(torch.float32)

    def total(i):
        return sum(value(r, i) for r in range(n))

    i = torch.arange(count, dtype=torch.int64)
    head = i[:per]
    table = {
        "all_reduce": lambda: total(i),
        "reduce": lambda: total(i) if rank == ROOT else None,
        "broadcast": lambda: value(ROOT, i),
        "all_gather": lambda: value(i // per, i % per),
        "gather": lambda: value(i // per, i % per) if rank == ROOT else None,
        "alltoall": lambda: value(i // per, rank * per + i % per),
        "scatter": lambda: value(ROOT, rank * per + head),
        "sendrecv": lambda: value((rank - 1) % n, i),
    }
    return table[coll]()


def check(coll, torch, dist, count, per, rank, n):
    """Wrong elements of one call, over all ranks."""
    idx = torch.arange(count, dtype=torch.int64)
    send = ((idx * 5 + rank * 3) % 9).to(torch.float32)
    in_place = coll in ("all_reduce", "reduce", "broadcast")
    recv = send.clone() if in_place else torch.full((count,), -1.0)
    make_call(coll, send, recv, per, rank, n)()
    want = expected(coll, torch, count, per, rank, n)
    bad = 0 if want is None else int((recv[:len(want)] != want).sum().item())
    bad = torch.tensor([bad], dtype=torch.int64)
    dist.all_reduce(bad)
    return int(bad.item())


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--coll", default="all_reduce", choices=list(COLLECTIVES), help="default all_reduce")
    parser.add_argument("--sizes", required=True, help="bytes, comma-separated (K/M/G suffixes)")
    parser.add_argument("--iters", default="20", help="timed calls: one value, or one per size")
    parser.add_argument("--warmups", default="5", help="untimed calls first: one value, or one per size")
    parser.add_argument("--check", type=int, default=0, help="1: verify one call per size")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default 1)")
    args = parser.parse_args()
    if ("gloo", args.coll) in MISSING:
        print(f"gloo_bench: {MISSING[('gloo', args.coll)]}", file=sys.stderr)
        return 3
    sizes = [parse_bytes(s) for s in args.sizes.split(",")]
    iters = per_size(args.iters, len(sizes), "iters")
    warmups = per_size(args.warmups, len(sizes), "warmups")

    for var in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        if var not in os.environ:
            raise SystemExit(f"gloo_bench: {var} is not set; start it with collrun -n N")
    import torch
    import torch.distributed as dist

    torch.set_num_threads(args.threads)
    dist.init_process_group("gloo", init_method="env://")
    rank, nranks = dist.get_rank(), dist.get_world_size()
    if rank == 0:
        print(f"# gloo_bench: {args.coll}, torch {torch.__version__} Gloo, {nranks} ranks, float32 sum, root 0")
        print("# %10s  %12s  %8s  %10s  %11s  %11s  %6s"
              % ("size(B)", "count", "iters", "time(us)", "algbw(GB/s)", "busbw(GB/s)", "#wrong"), flush=True)
    for size, it, wu in zip(sizes, iters, warmups):
        count, per = block_count(args.coll, size, nranks)
        it = max(it, 1)
        # Zeros: the in-place reductions then keep their values instead of growing to inf.
        send, recv = torch.zeros(count), torch.zeros(count)
        call = make_call(args.coll, send, recv, per, rank, nranks)
        for _ in range(wu):
            call()
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(it):
            call()
        local = torch.tensor([(time.perf_counter() - t0) / it], dtype=torch.float64)
        dist.all_reduce(local, op=dist.ReduceOp.MAX)
        sec = local.item()
        wrong = check(args.coll, torch, dist, count, per, rank, nranks) if args.check else -1
        algbw = count * 4 / 1e9 / sec if sec > 0 else 0.0
        if rank == 0:
            print("%12d  %12d  %8d  %10.2f  %11.3f  %11.3f  %6d"
                  % (count * 4, per, it, sec * 1e6, algbw, busbw(args.coll, count * 4, nranks, sec * 1e6), wrong),
                  flush=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
