"""A rank that dies mid-run gives every surviving rank a RuntimeError, never a hang.

    /usr/bin/python3 tests/python/test_peer_death.py [RANKS]

Starts its own ranks (a launcher would stop the survivors as soon as one rank fails, before they
could report anything), rendezvousing through a FileStore. Rank 1 dies in the middle of a loop of
all_reduce calls, once by os._exit and once by SIGKILL; each survivor must leave the loop with a
RuntimeError naming the dead rank, within seconds, although the groups' timeout is 60 s.
"""
import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from datetime import timedelta

VICTIM = 1
DEATH_STEP = 20
GROUP_TIMEOUT = timedelta(seconds=60)
DEADLINE_SECONDS = 30  # for the whole run: startup, 20 steps, detection, exit


def rank_main(rank, ranks, mode, store_path):
    import torch
    import torch.distributed as dist
    import torch_collective  # noqa: F401  (registers the "collective" backend)

    dist.init_process_group("collective", init_method=f"file://{store_path}", rank=rank, world_size=ranks,
                            timeout=GROUP_TIMEOUT)
    tensor = torch.ones(1 << 18)
    try:
        for step in range(1_000_000):
            if rank == VICTIM and step == DEATH_STEP:
                if mode == "exit":
                    os._exit(3)
                os.kill(os.getpid(), signal.SIGKILL)
            dist.all_reduce(tensor)
    except RuntimeError as error:
        print(f"rank {rank} caught RuntimeError after step {step}: {error}", flush=True)
        return 0
    print(f"rank {rank}: the loop ended without an error", flush=True)
    return 1


def run_case(ranks, mode):
    """Starts the ranks, waits for them, and returns a list of what went wrong."""
    problems = []
    with tempfile.TemporaryDirectory() as directory:
        store_path = os.path.join(directory, "store")
        start = time.monotonic()
        processes = [subprocess.Popen([sys.executable, __file__, "--rank", str(r), "--ranks", str(ranks), "--mode",
                                       mode, "--store", store_path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      text=True) for r in range(ranks)]
        outputs = []
        for process in processes:
            try:
                outputs.append(process.communicate(timeout=max(1, DEADLINE_SECONDS - (time.monotonic() - start)))[0])
            except subprocess.TimeoutExpired:
                process.kill()
                outputs.append(process.communicate()[0])
                problems.append(f"rank {processes.index(process)} still ran after {DEADLINE_SECONDS} s (a hang)")
        elapsed = time.monotonic() - start
    expected_victim_status = 3 if mode == "exit" else -signal.SIGKILL
    for rank, (process, output) in enumerate(zip(processes, outputs)):
        if rank == VICTIM:
            if process.returncode != expected_victim_status:
                problems.append(f"victim exited with {process.returncode}, expected {expected_victim_status}")
            continue
        if process.returncode != 0 or "caught RuntimeError" not in output:
            problems.append(f"rank {rank} exited with {process.returncode}:\n{output}")
        elif f"rank {VICTIM}" not in output:
            problems.append(f"rank {rank}'s error does not name rank {VICTIM}:\n{output}")
    print(f"{mode}, {ranks} ranks: {elapsed:.1f} s")
    for output in outputs:
        for line in output.splitlines():
            if "caught RuntimeError" in line:
                print("  " + line)
    return problems


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("ranks", nargs="?", type=int, default=3)
    parser.add_argument("--rank", type=int)
    parser.add_argument("--ranks", dest="rank_count", type=int)
    parser.add_argument("--mode", choices=["exit", "kill"])
    parser.add_argument("--store")
    args = parser.parse_args()
    if args.rank is not None:
        return rank_main(args.rank, args.rank_count, args.mode, args.store)
    failed = 0
    for mode in ("exit", "kill"):
        problems = run_case(args.ranks, mode)
        for problem in problems:
            print(f"FAILED ({mode}): {problem}")
        failed += 1 if problems else 0
    print(f"test_peer_death: {2 - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
