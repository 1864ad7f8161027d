#!/usr/bin/env python3
"""NCCL through torch.distributed, for tools/gpu_check.sh: all-reduce of --bytes of float32 and of
8 bytes, on --ranks processes sharing GPU 0 where NCCL allows several ranks per GPU
(NCCL_MULTI_RANK_GPU_ENABLE=1, NCCL 2.30 and later), else on one rank (and it says so). Prints
"RESULT label metric value unit" lines, the same metrics as tests/cuda/gpu_bench."""

import argparse
import os
import socket
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def timed(fn, iters):
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(iters):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / iters


def rank_main(rank, world, port, nbytes, label):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.cuda.set_device(0)
    dist.init_process_group("nccl", rank=rank, world_size=world)
    big = torch.zeros(nbytes // 4, dtype=torch.float32, device="cuda")
    small = torch.zeros(2, dtype=torch.float32, device="cuda")
    for _ in range(3):
        dist.all_reduce(big)
    dist.barrier()
    t_big = timed(lambda: dist.all_reduce(big), 10)
    for _ in range(10):
        dist.all_reduce(small)
    dist.barrier()
    t_small = timed(lambda: dist.all_reduce(small), 200)
    if rank == 0 and world == 1:
        # In place on one rank NCCL moves nothing: only the call's cost is worth reporting.
        print(f"RESULT {label} allreduce_in_place_time {t_big * 1e6:.1f} us ({nbytes} bytes, moves nothing)")
        print(f"RESULT {label} allreduce_in_place_8B_latency {t_small * 1e6:.2f} us")
    elif rank == 0:
        busbw = nbytes / t_big * (2 * (world - 1) / world if world > 1 else 1)
        print(f"RESULT {label} allreduce_time {t_big * 1e6:.1f} us ({nbytes} bytes, {world} ranks)")
        print(f"RESULT {label} allreduce_busbw {busbw:.3e} B/s")
        print(f"RESULT {label} allreduce_8B_latency {t_small * 1e6:.2f} us")
    dist.destroy_process_group()


def one_rank_out_of_place(nbytes):
    """NCCL's all-reduce on one rank, out of place (torch.cuda.nccl, single process): with one rank
    it moves each byte once from the input to the output, the copy every all-reduce ends with.
    torch.distributed's all_reduce is in place, which on one rank moves nothing."""
    import torch.cuda.nccl as nccl
    torch.cuda.set_device(0)
    results = {}
    for label, n in (("big", nbytes // 4), ("small", 2)):
        src = torch.ones(n, dtype=torch.float32, device="cuda")
        dst = torch.zeros_like(src)
        iters = 10 if label == "big" else 200
        for _ in range(3):
            nccl.all_reduce([src], outputs=[dst])
        results[label] = timed(lambda: nccl.all_reduce([src], outputs=[dst]), iters)
        if not torch.equal(dst, src):
            raise SystemExit("torch.cuda.nccl.all_reduce out of place gave a wrong result")
    label = "nccl_n1_out_of_place"
    print(f"RESULT {label} allreduce_time {results['big'] * 1e6:.1f} us ({nbytes} bytes, 1 ranks)")
    print(f"RESULT {label} allreduce_algbw {nbytes / results['big']:.3e} B/s")
    print(f"RESULT {label} allreduce_8B_latency {results['small'] * 1e6:.2f} us")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--bytes", type=int, default=256 << 20)
    args = parser.parse_args()
    version = torch.cuda.nccl.version()
    version = version if isinstance(version, tuple) else (version // 10000, version // 100 % 100, version % 100)
    world = args.ranks
    if version >= (2, 30, 0):
        os.environ["NCCL_MULTI_RANK_GPU_ENABLE"] = "1"
    else:
        print(f"NCCL {version} refuses several ranks on one GPU (2.30 allows it): running 1 rank")
        world = 1
        one_rank_out_of_place(args.bytes)
    label = f"nccl{'.'.join(map(str, version))}_n{world}"
    mp.spawn(rank_main, args=(world, free_port(), args.bytes, label), nprocs=world, join=True)


if __name__ == "__main__":
    main()
