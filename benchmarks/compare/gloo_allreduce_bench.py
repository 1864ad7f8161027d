#!/usr/bin/env python3
"""Float32 sum all-reduce through Gloo (torch.distributed, backend "gloo"), timed like the
*_perf programs: per size, warm-up calls, a barrier, then `iters` calls back to back; the time is
the average per call, the maximum over ranks. torch's all_reduce works in place.

Start it under a launcher that sets RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT:

    collrun -n 2 /usr/bin/python3 gloo_allreduce_bench.py --sizes 8,64K --iters 1000,200

Output: '#' comment lines, then one row per size with the columns
    size(B) count iters time(us) algbw(GB/s) busbw(GB/s) #wrong
(busbw = algbw * 2(n-1)/n as in nccl-tests; #wrong is -1 when not checked).
"""
import argparse
import os
import sys
import time


def parse_bytes(text):
    text = text.strip()
    scale = 1
    if text[-1:] in ("B", "b"):
        text = text[:-1]
    suffixes = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    if text[-1:].upper() in suffixes:
        scale = suffixes[text[-1:].upper()]
        text = text[:-1]
    return int(text) * scale


def per_size(values, nsizes, name):
    items = [int(v) for v in values.split(",")]
    if len(items) == 1:
        return items * nsizes
    if len(items) != nsizes:
        raise SystemExit(f"gloo_allreduce_bench: --{name} needs one value or one per size")
    return items


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", required=True, help="bytes, comma-separated (K/M/G suffixes)")
    parser.add_argument("--iters", default="20", help="timed calls: one value, or one per size")
    parser.add_argument("--warmups", default="5", help="untimed calls first: one value, or one per size")
    parser.add_argument("--check", type=int, default=0, help="1: verify one call per size")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default 1)")
    args = parser.parse_args()
    sizes = [parse_bytes(s) for s in args.sizes.split(",")]
    iters = per_size(args.iters, len(sizes), "iters")
    warmups = per_size(args.warmups, len(sizes), "warmups")

    for var in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        if var not in os.environ:
            raise SystemExit(f"gloo_allreduce_bench: {var} is not set; start it with collrun -n N")
    import torch
    import torch.distributed as dist

    torch.set_num_threads(args.threads)
    dist.init_process_group("gloo", init_method="env://")
    rank, nranks = dist.get_rank(), dist.get_world_size()
    if rank == 0:
        print(f"# gloo_allreduce_bench: torch {torch.__version__} Gloo, {nranks} ranks, float32 sum, in-place")
        print("# %10s  %12s  %8s  %10s  %11s  %11s  %6s"
              % ("size(B)", "count", "iters", "time(us)", "algbw(GB/s)", "busbw(GB/s)", "#wrong"), flush=True)
    for size, it, wu in zip(sizes, iters, warmups):
        count = size // 4
        it = max(it, 1)
        tensor = torch.ones(count, dtype=torch.float32)
        for _ in range(wu):
            dist.all_reduce(tensor)
        tensor.fill_(0.0)  # in place: keep the values from growing to inf during the timed calls
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(it):
            dist.all_reduce(tensor)
        local = torch.tensor([(time.perf_counter() - t0) / it], dtype=torch.float64)
        dist.all_reduce(local, op=dist.ReduceOp.MAX)
        sec = local.item()
        wrong = -1
        if args.check:
            idx = torch.arange(count, dtype=torch.int64)
            tensor = ((idx * 5 + rank * 3) % 9).to(torch.float32)
            dist.all_reduce(tensor)
            want = sum(((idx * 5 + r * 3) % 9) for r in range(nranks)).to(torch.float32)
            bad = torch.tensor([int((tensor != want).sum().item())], dtype=torch.int64)
            dist.all_reduce(bad)
            wrong = int(bad.item())
        algbw = count * 4 / 1e9 / sec if sec > 0 else 0.0
        busbw = algbw * 2.0 * (nranks - 1) / nranks
        if rank == 0:
            print("%12d  %12d  %8d  %10.2f  %11.3f  %11.3f  %6d"
                  % (count * 4, count, it, sec * 1e6, algbw, busbw, wrong), flush=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
