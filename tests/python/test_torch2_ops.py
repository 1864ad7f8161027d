"""torch 2.x's forms of torch.distributed on the collective backend, beyond test_ops.py.

    collrun -n 2 /opt/collective-py/bin/python tests/python/test_torch2_ops.py      (and -n 3)

The monitored barrier (passing, and naming the ranks that did not come, first or all), split_group
(new ranks in order, collectives inside the parts), new_subgroups, object collectives on a
subgroup, Work futures chained with then(), a group aborted while one of its calls waits for
ranks that never come (the call fails at once, not at the timeout), a call on a backend that
was shut down (fails at once), and the backend as torch
registered it (per-device, name, options). Outputs are checked against references each rank
computes; every failure names what differs.
"""
import threading
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.distributed.distributed_c10d as c10d

from common import rank_input, start_process_group


def expect_error(check, what, call, *fragments):
    try:
        call()
    except RuntimeError as error:
        for fragment in fragments:
            check.true(fragment in str(error), f"{what}: message lacks {fragment!r}: {error}")
        return str(error)
    check.fail(f"{what}: no RuntimeError")


def test_registration(check, rank, ranks):
    check.true(dist.get_backend() == "collective", f"get_backend() is {dist.get_backend()}")
    group = c10d._get_default_group()
    backend = group._get_backend(torch.device("cpu"))
    check.true(backend.name() == "collective", f"the CPU backend is {backend.name()}")
    check.true(backend.supports_splitting, "the backend says it cannot split")


def test_monitored_barrier(check, rank, ranks):
    dist.monitored_barrier(timeout=timedelta(seconds=30))
    check.true(True, "monitored_barrier with every rank")
    # The last rank comes 2.5 s late: rank 0, waiting 1 s, names it; the others hear rank 0's
    # verdict, and so does the late rank when it comes. (design value)
    late = ranks - 1
    if rank == late:
        time.sleep(2.5)
    message = expect_error(check, "monitored_barrier with a late rank",
                           lambda: dist.monitored_barrier(timeout=timedelta(seconds=1)),
                           "failed to pass monitoredBarrier in 1000 ms", "Timed out")
    check.true(f"Rank {late} failed" in message, f"the message does not name rank {late}: {message}")
    dist.barrier()
    # wait_all_ranks: every rank but 0 comes late, and all of them are named.
    if rank != 0:
        time.sleep(2.5)
    message = expect_error(check, "monitored_barrier(wait_all_ranks) with every other rank late",
                           lambda: dist.monitored_barrier(timeout=timedelta(seconds=1), wait_all_ranks=True),
                           "failed to pass monitoredBarrier")
    missing = ", ".join(str(r) for r in range(1, ranks))
    name = "Ranks" if ranks > 2 else "Rank"
    check.true(f"{name} {missing} failed" in message, f"not every late rank named: {message}")
    dist.barrier()
    # A zero timeout is zero, as with gloo: rank 0 alone, on the group itself, fails at once in
    # gloo's words instead of waiting for the group's timeout (torch's own suite does this).
    group = dist.new_group(list(range(ranks)))
    if rank == 0:
        started = time.monotonic()
        expect_error(check, "monitored_barrier(timeout=0)", lambda: group.monitored_barrier(timedelta(0)),
                     "Rank 0 timed out in monitoredBarrier")
        elapsed = time.monotonic() - started
        check.true(elapsed < 5, f"monitored_barrier(timeout=0) failed only after {elapsed:.1f} s")
    dist.barrier()


def test_split_group(check, rank, ranks):
    # Even and odd ranks, listed in an order that is not sorted: torch numbers the new ranks in the
    # order of the list, and the backend must agree (all_gather's order shows it).
    parts = [sorted(range(0, ranks, 2), reverse=True), list(range(1, ranks, 2))]
    group = dist.split_group(split_ranks=parts)
    mine = parts[rank % 2]
    check.true(dist.get_world_size(group) == len(mine), f"split group size {dist.get_world_size(group)}")
    check.true(dist.get_rank(group) == mine.index(rank),
               f"split group rank {dist.get_rank(group)} for global rank {rank} in {mine}")
    tensor = rank_input(rank, 7, torch.float32)
    dist.all_reduce(tensor, group=group)
    check.equal(tensor, sum(rank_input(r, 7, torch.float32) for r in mine), "all_reduce in the split group")
    gathered = [torch.zeros(3) for _ in mine]
    dist.all_gather(gathered, torch.full((3,), float(rank)), group=group)
    check.equal(torch.stack(gathered), torch.stack([torch.full((3,), float(r)) for r in mine]),
                "all_gather in the split group, in the order split_ranks listed")
    dist.destroy_process_group(group)


def test_subgroups_and_objects(check, rank, ranks):
    subgroup, _ = dist.new_subgroups(group_size=1 if ranks % 2 else 2)
    members = dist.get_world_size(subgroup)
    objects = [None] * members
    dist.all_gather_object(objects, {"rank": rank, "name": f"r{rank}"}, group=subgroup)
    first = rank - dist.get_rank(subgroup)
    check.true([o["rank"] for o in objects] == list(range(first, first + members)),
               f"all_gather_object on a subgroup: {objects}")
    box = [f"from {first}" if rank == first else None]
    dist.broadcast_object_list(box, src=first, group=subgroup)
    check.true(box[0] == f"from {first}", f"broadcast_object_list on a subgroup: {box}")
    received = [None]
    dist.scatter_object_list(received, [f"to {first + i}" for i in range(members)] if rank == first else None,
                             src=first, group=subgroup)
    check.true(received[0] == f"to {rank}", f"scatter_object_list on a subgroup: {received}")


def test_futures(check, rank, ranks):
    tensor = rank_input(rank, 11, torch.float32)
    work = dist.all_reduce(tensor, async_op=True)
    doubled = work.get_future().then(lambda future: future.value()[0] * 2).wait()
    expected = sum(rank_input(r, 11, torch.float32) for r in range(ranks))
    check.equal(doubled, expected * 2, "then() on the Work's future")
    work.wait()  # the Future completes just before its Work: wait for the Work too
    check.true(work.is_completed(), "the Work is complete after wait()")


def test_abort(check, rank, ranks):
    """Rank 0 calls an all-reduce the others never join, then aborts the group from another thread:
    the pending call fails within a second, long before the group's 60 s timeout."""
    group = dist.new_group(list(range(ranks)), timeout=timedelta(seconds=60))
    if rank == 0:
        work = dist.all_reduce(torch.ones(4), group=group, async_op=True)
        aborter = threading.Timer(0.5, lambda: c10d._abort_process_group(group))
        started = time.monotonic()
        aborter.start()
        try:
            work.wait()
        except RuntimeError as error:
            elapsed = time.monotonic() - started
            check.true(elapsed < 10, f"the aborted call failed only after {elapsed:.1f} s")
            print(f"rank 0: aborted all_reduce failed after {elapsed:.2f} s: {str(error)[:120]}", flush=True)
        else:
            check.fail("an all_reduce on an aborted group succeeded")
        aborter.join()
    dist.barrier()


def test_abort_recv_any_source(check, rank, ranks):
    """The same for a receive from any source that nobody sends to: its wait is on the store, not
    in the library, and must end at the abort too."""
    group = dist.new_group(list(range(ranks)), timeout=timedelta(seconds=60))
    if rank == 0:
        work = dist.irecv(torch.zeros(4), group=group)
        aborter = threading.Timer(0.5, lambda: c10d._abort_process_group(group))
        started = time.monotonic()
        aborter.start()
        expect_error(check, "recv from any source on an aborted group", work.wait, "aborted")
        elapsed = time.monotonic() - started
        check.true(elapsed < 10, f"the aborted recv from any source failed only after {elapsed:.1f} s")
        aborter.join()
    dist.barrier()


def test_call_after_shutdown(check, rank, ranks):
    """A call on a backend that was shut down fails at once, naming why, instead of waiting for a
    worker that has stopped; the calls queued before the shutdown ran."""
    group = dist.new_group(list(range(ranks)))
    backend = group._get_backend(torch.device("cpu"))
    tensor = rank_input(rank, 5, torch.float32)
    work = dist.all_reduce(tensor, group=group, async_op=True)
    backend.shutdown()
    check.true(work.is_completed(), "a call queued before shutdown() had not completed when it returned")
    check.equal(tensor, sum(rank_input(r, 5, torch.float32) for r in range(ranks)), "all_reduce before shutdown")
    started = time.monotonic()
    expect_error(check, "all_reduce after shutdown", lambda: backend.allreduce([torch.ones(3)]).wait(),
                 "shut down", "did not run")
    elapsed = time.monotonic() - started
    check.true(elapsed < 5, f"the call after shutdown failed only after {elapsed:.1f} s")
    dist.barrier()


def main():
    rank, ranks, check = start_process_group()
    test_registration(check, rank, ranks)
    test_monitored_barrier(check, rank, ranks)
    if hasattr(dist, "split_group"):
        test_split_group(check, rank, ranks)
    else:
        print(f"rank {rank}: torch {torch.__version__} has no split_group", flush=True)
    test_subgroups_and_objects(check, rank, ranks)
    test_futures(check, rank, ranks)
    test_abort(check, rank, ranks)
    test_abort_recv_any_source(check, rank, ranks)
    test_call_after_shutdown(check, rank, ranks)
    dist.destroy_process_group()
    check.summary(f"test_torch2_ops ({ranks} ranks)")


if __name__ == "__main__":
    main()
