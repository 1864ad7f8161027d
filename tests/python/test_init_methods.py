"""init_process_group("collective") with each init method torch offers: env://, tcp:// and file://.

    PYTHON tests/python/test_init_methods.py COLLRUN

The test starts the ranks itself: for env:// under collrun (which sets MASTER_ADDR, MASTER_PORT,
RANK and WORLD_SIZE), for tcp:// and file:// as plain processes given --rank and --world-size.
Each rank all-reduces a tensor that depends on its rank and checks the sum; every rank must exit
0 within the time limit.
"""
import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time

RANKS = 2
LIMIT_S = 120


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def rank_main(init_method, rank, world_size):
    import torch
    import torch.distributed as dist
    import torch_collective  # noqa: F401  (registers the backend)

    kwargs = {} if init_method == "env://" else {"rank": rank, "world_size": world_size}
    dist.init_process_group("collective", init_method=init_method, **kwargs)
    rank, world_size = dist.get_rank(), dist.get_world_size()
    tensor = torch.arange(5, dtype=torch.float64) + rank
    dist.all_reduce(tensor)
    expected = torch.arange(5, dtype=torch.float64) * world_size + sum(range(world_size))
    if not torch.equal(tensor, expected):
        print(f"rank {rank}: {init_method}: all_reduce gave {tensor}, expected {expected}", flush=True)
        sys.exit(1)
    dist.destroy_process_group()
    print(f"rank {rank}: {init_method}: ok", flush=True)


def wait_all(processes, what):
    deadline = time.monotonic() + LIMIT_S
    failed = False
    for process in processes:
        try:
            status = process.wait(timeout=max(1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            status = "timed out"
        if status != 0:
            print(f"FAILED: {what}: a rank ended with {status}", flush=True)
            failed = True
    return not failed


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("collrun", nargs="?", help="the collrun launcher (for env://)")
    parser.add_argument("--rank-of", dest="init_method", help=argparse.SUPPRESS)
    parser.add_argument("--rank", type=int, default=-1, help=argparse.SUPPRESS)
    parser.add_argument("--world-size", type=int, default=RANKS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.init_method:
        rank_main(args.init_method, args.rank, args.world_size)
        return
    if not args.collrun:
        parser.error("give the collrun launcher")
    me = os.path.abspath(__file__)
    passed = 0
    # env://: the launcher's variables.
    collrun = subprocess.Popen([args.collrun, "-n", str(RANKS), sys.executable, me, "--rank-of", "env://"])
    passed += wait_all([collrun], "env:// under collrun")
    # tcp:// and file://: every rank is told the address (or file), its rank and the world size.
    with tempfile.TemporaryDirectory() as scratch:
        for init_method in [f"tcp://127.0.0.1:{free_port()}", f"file://{scratch}/rendezvous"]:
            ranks = [subprocess.Popen([sys.executable, me, "--rank-of", init_method, "--rank", str(rank),
                                       "--world-size", str(RANKS)]) for rank in range(RANKS)]
            passed += wait_all(ranks, init_method)
    if passed != 3:
        sys.exit(1)
    print(f"test_init_methods: {passed} passed, 0 failed", flush=True)


if __name__ == "__main__":
    main()
