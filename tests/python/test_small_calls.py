"""Small calls without the hand-over to the worker, and the semantics they must keep.

    collrun -n 2 PYTHON tests/python/test_small_calls.py      (and -n 3)

A caller that waits for a small call runs it on its own thread (python/src/work_queue.h): counted
here by the backend's own counters of who ran each batch (the hand-over gave every call to the
worker). What
must not change: an asynchronous call progresses without its caller waiting, it returns before
its peers have joined, and its error arrives at wait(); the calls of one group run in the order
they were issued on every rank, sync and async, small and large (COLL_CHECK=1 makes a call that
meets a different one on another rank fail on every rank).
"""
import os
import time
from datetime import timedelta

os.environ.setdefault("COLL_CHECK", "1")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch_collective  # noqa: E402

from common import rank_input, start_process_group  # noqa: E402


def voluntary_switches():
    """How often this thread went to sleep so far (Linux counts it per thread)."""
    with open("/proc/thread-self/status") as status:
        for line in status:
            if line.startswith("voluntary_ctxt_switches:"):
                return int(line.split()[1])
    raise RuntimeError("no voluntary_ctxt_switches in /proc/thread-self/status")


def who_ran(calls):
    """Runs calls() and returns the batches it left to the threads that waited for them, those the
    backend's worker ran, and how often this thread went to sleep meanwhile."""
    def counts():
        ran = torch_collective._C._run_counts()
        return ran["by_caller"], ran["by_worker"], voluntary_switches()
    before = counts()
    calls()
    return tuple(after - start for after, start in zip(counts(), before))


def test_waiting_caller_runs_the_call(check, rank, ranks):
    """200 synchronous 8-byte all_reduces, then 100 send/recv round trips between ranks 0 and 1:
    each is run by the thread that waits for it, not handed to the worker. Counted by the
    backend's own counters, which do not depend on how loaded the machine is; how often the
    calling thread slept is printed for the reader (a loaded machine makes it sleep whenever a
    peer is descheduled for milliseconds, so it is no pass criterion)."""
    tensor = torch.zeros(2)
    dist.barrier()

    def all_reduces():
        for _ in range(200):
            dist.all_reduce(tensor)

    by_caller, by_worker, slept = who_ran(all_reduces)
    print(f"rank {rank}: 200 synchronous 8-byte all_reduces: {by_caller} run by the caller, {by_worker} by the "
          f"worker; the calling thread slept {slept} times", flush=True)
    # A caller descheduled between posting and waiting for a whole tick leaves its call to the
    # worker: rare, so most calls must still be the caller's.
    check.true(by_caller >= 150, f"200 synchronous 8-byte all_reduces: only {by_caller} run by the caller "
               f"({by_worker} by the worker)")
    dist.barrier()
    if rank < 2:
        message = torch.zeros(4)

        def round_trips():
            for _ in range(100):
                if rank == 0:
                    dist.send(message, dst=1)
                    dist.recv(message, src=1)
                else:
                    dist.recv(message, src=0)
                    dist.send(message, dst=0)

        by_caller, by_worker, slept = who_ran(round_trips)
        print(f"rank {rank}: 100 send/recv round trips: {by_caller} calls run by the caller, {by_worker} by the "
              f"worker; the calling thread slept {slept} times", flush=True)
        check.true(by_caller >= 150, f"100 send/recv round trips (200 calls): only {by_caller} run by the caller "
                   f"({by_worker} by the worker)")
    dist.barrier()


def test_async_progresses_without_its_caller(check, rank, ranks):
    """Rank 0 issues a small all_reduce asynchronously and then sleeps without waiting: the other
    ranks' synchronous all_reduces must complete meanwhile, and rank 0's call returned at once."""
    tensor = rank_input(rank, 3, torch.float32)
    expected = sum(rank_input(r, 3, torch.float32) for r in range(ranks))
    dist.barrier()
    if rank == 0:
        started = time.monotonic()
        work = dist.all_reduce(tensor, async_op=True)
        returned = time.monotonic() - started
        time.sleep(1.5)
        check.true(returned < 0.5, f"an asynchronous all_reduce returned only after {returned:.2f} s")
        check.true(work.is_completed(), "an asynchronous all_reduce nobody waited for did not complete in 1.5 s")
        work.wait()
    else:
        time.sleep(0.1)
        started = time.monotonic()
        dist.all_reduce(tensor)
        elapsed = time.monotonic() - started
        check.true(elapsed < 1.2, f"the all_reduce took {elapsed:.2f} s while rank 0 slept without waiting")
    check.equal(tensor, expected, "all_reduce issued asynchronously and never waited for at once")
    dist.barrier()


def test_order_of_mixed_calls(check, rank, ranks):
    """The same mixed sequence on every rank (seeded): synchronous and asynchronous all_reduces of
    8 bytes to 4 MiB and broadcasts, waited for in a shuffled order at the end."""
    generator = torch.Generator().manual_seed(49)
    pending = []
    for index in range(60):
        count = [2, 3, 100, 1 << 20][int(torch.randint(0, 4, (1,), generator=generator))]
        is_async = bool(torch.randint(0, 2, (1,), generator=generator))
        if int(torch.randint(0, 4, (1,), generator=generator)) == 0:
            root = index % ranks
            tensor = rank_input(rank, count, torch.float32, offset=index)
            work = dist.broadcast(tensor, src=root, async_op=is_async)
            expected = rank_input(root, count, torch.float32, offset=index)
        else:
            tensor = rank_input(rank, count, torch.float32, offset=index)
            work = dist.all_reduce(tensor, async_op=is_async)
            expected = sum(rank_input(r, count, torch.float32, offset=index) for r in range(ranks))
        pending.append((index, work, tensor, expected))
    order = torch.randperm(len(pending), generator=generator).tolist()
    for position in order:
        index, work, tensor, expected = pending[position]
        if work is not None:
            work.wait()
        check.equal(tensor, expected, f"call {index} of the mixed sequence")
    dist.barrier()


def test_async_error_at_wait(check, rank, ranks):
    """A small asynchronous all_reduce that no other rank joins, on a group with a 2 s timeout:
    the call returns at once, and its timeout arrives at wait(), as before."""
    group = dist.new_group(list(range(ranks)), timeout=timedelta(seconds=2))
    if rank == 0:
        started = time.monotonic()
        work = dist.all_reduce(torch.ones(2), group=group, async_op=True)
        returned = time.monotonic() - started
        check.true(returned < 0.5, f"the asynchronous all_reduce returned only after {returned:.2f} s")
        try:
            work.wait()
            check.fail("an all_reduce nobody joined succeeded")
        except RuntimeError as error:
            check.true(" Timed out " in str(error), f"the error does not say Timed out: {error}")
    dist.barrier()


def main():
    rank, ranks, check = start_process_group()
    test_waiting_caller_runs_the_call(check, rank, ranks)
    test_async_progresses_without_its_caller(check, rank, ranks)
    test_order_of_mixed_calls(check, rank, ranks)
    test_async_error_at_wait(check, rank, ranks)
    dist.destroy_process_group()
    check.summary("test_small_calls")


if __name__ == "__main__":
    main()
