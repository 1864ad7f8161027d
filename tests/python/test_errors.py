"""Errors on the collective backend reach Python as RuntimeError, with libcollective's message.

    collrun -n 2 /usr/bin/python3 tests/python/test_errors.py     (and -n 3)

Each failure that breaks a communicator happens on a group of its own (new_group), so the world
group stays usable for the next case.
"""
import os
import time
from datetime import timedelta

# Read once, when the first communicator is created: ranks compare every call's arguments.
os.environ["COLL_CHECK"] = "1"

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

from common import Checker, FLAT_ALL_GATHERS  # noqa: E402


def expect_runtime_error(check, what, call, *fragments):
    """Runs call(); it must raise RuntimeError whose message holds every fragment."""
    try:
        call()
    except RuntimeError as error:
        message = str(error)
        for fragment in fragments:
            check.true(fragment in message, f"{what}: message lacks {fragment!r}: {message}")
        return message
    check.fail(f"{what}: no RuntimeError")


def test_backend_checks(check, rank, ranks):
    """Arguments the backend itself refuses, before any rank is involved."""
    expect_runtime_error(check, "bool all_reduce", lambda: dist.all_reduce(torch.ones(3, dtype=torch.bool)),
                         "collective backend: allreduce does not support tensors of type Bool in reductions")
    # torch 2.x hands complex tensors to backends as real views (view_as_real) for the operations
    # where that is exact; 1.13 passes them through, and the backend refuses the type.
    complex_values = torch.full((3,), complex(rank, -rank), dtype=torch.complex64)
    if torch.__version__ >= "2":
        dist.broadcast(complex_values, 0)
        check.equal(torch.view_as_real(complex_values), torch.zeros(3, 2), "complex broadcast (torch 2.x: real view)")
    else:
        expect_runtime_error(check, "complex broadcast", lambda: dist.broadcast(complex_values, 0),
                             "does not support tensors of type ComplexFloat")
    # all_reduce composes the bitwise ops (test_bitwise.py); the other reductions do not have them.
    expect_runtime_error(check, "bitwise reduce", lambda: dist.reduce(torch.ones(3, dtype=torch.int32), 0,
                                                                      op=dist.ReduceOp.BAND),
                         "does not support ReduceOp")
    expect_runtime_error(check, "bitwise all_reduce of floats", lambda: dist.all_reduce(torch.ones(3),
                                                                                        op=dist.ReduceOp.BXOR),
                         "ReduceOp.BXOR takes integer or bool tensors")
    outputs = [torch.zeros(4) for _ in range(ranks)]
    expect_runtime_error(check, "all_gather size", lambda: dist.all_gather(outputs, torch.zeros(5)),
                         "holds a tensor of 4 elements, expected 5")


def test_library_invalid_argument(check, rank, ranks):
    """A buffer layout only the library checks: the input overlaps the output, but not in place."""
    output = torch.zeros(ranks * 8)
    misplaced_input = output[1:9]
    expect_runtime_error(check, "overlapping all_gather", lambda: FLAT_ALL_GATHERS[0](output, misplaced_input),
                         "collAllGather: sendbuff", "overlap without being in place", "[collInvalidArgument]")
    # Nothing was touched: the communicator still works.
    tensor = torch.ones(5)
    dist.all_reduce(tensor)
    check.equal(tensor, torch.full((5,), float(ranks)), "all_reduce after collInvalidArgument")


def test_mismatch_named(check, rank, ranks):
    """COLL_CHECK=1: ranks that disagree on a call's count are named, on every rank."""
    tensor = torch.ones(10 + (2 if rank == ranks - 1 else 0))
    expect_runtime_error(check, "mismatched count", lambda: dist.all_reduce(tensor),
                         "collAllReduce", "COLL_CHECK: rank", "count=12", "count=10", "[collInvalidUsage]")
    tensor = torch.ones(7)
    dist.all_reduce(tensor)  # collInvalidUsage leaves the communicator usable
    check.equal(tensor, torch.full((7,), float(ranks)), "all_reduce after COLL_CHECK mismatch")


def test_timeout_from_new_group(check, rank, ranks):
    """new_group(timeout=...) becomes the communicator's timeout; a rank that never comes times out."""
    group = dist.new_group(list(range(ranks)), timeout=timedelta(seconds=2))
    if rank == 0:
        start = time.monotonic()
        message = expect_runtime_error(check, "all_reduce nobody joins", lambda: dist.all_reduce(torch.ones(3),
                                                                                                group=group),
                                       "timed out after 2000 ms", "[collTimeout]")
        elapsed = time.monotonic() - start
        check.true(1.5 < elapsed < 10, f"timed out after {elapsed:.1f} s, expected about 2 s ({message})")
        # A failed communicator fails fast from then on.
        start = time.monotonic()
        expect_runtime_error(check, "call on a failed group", lambda: dist.broadcast(torch.ones(3), 0, group=group),
                             "failed earlier")
        check.true(time.monotonic() - start < 1, "a failed communicator fails fast")
    dist.barrier()  # the others wait here, on the world group, until rank 0 is done


def test_async_error(check, rank, ranks):
    """An asynchronous call's error arrives at wait(), and through its Future."""
    group = dist.new_group(list(range(ranks)), timeout=timedelta(seconds=1))
    if rank == 0:
        work = dist.all_reduce(torch.ones(3), group=group, async_op=True)
        future = work.get_future()
        expect_runtime_error(check, "wait on a failing async call", work.wait, "[collTimeout]")
        expect_runtime_error(check, "future of a failing async call", future.wait, "timed out")
        check.true(work.is_completed(), "a failed work is completed")
    dist.barrier()


def test_stream_setting_refused(check, rank, ranks):
    """A value of TORCH_COLLECTIVE_CUDA_STREAM the backend does not know fails the group's creation,
    naming the variable and what it takes (every rank sets the same)."""
    os.environ["TORCH_COLLECTIVE_CUDA_STREAM"] = "sideways"
    try:
        expect_runtime_error(check, "TORCH_COLLECTIVE_CUDA_STREAM=sideways", lambda: dist.new_group(list(range(ranks))),
                             "TORCH_COLLECTIVE_CUDA_STREAM=sideways", "expected internal", "or current")
    finally:
        del os.environ["TORCH_COLLECTIVE_CUDA_STREAM"]
    os.environ["TORCH_COLLECTIVE_CUDA_STREAM"] = "current"
    try:
        group = dist.new_group(list(range(ranks)))
        value = torch.ones(3)
        dist.all_reduce(value, group=group)
        check.equal(value, torch.full((3,), float(ranks)), "all_reduce in a group made with TORCH_COLLECTIVE_CUDA_STREAM=current")
    finally:
        del os.environ["TORCH_COLLECTIVE_CUDA_STREAM"]
    dist.barrier()


def main():
    dist.init_process_group("collective")
    rank, ranks = dist.get_rank(), dist.get_world_size()
    check = Checker()
    for test in (test_backend_checks, test_library_invalid_argument, test_mismatch_named,
                 test_timeout_from_new_group, test_async_error, test_stream_setting_refused):
        test(check, rank, ranks)
    dist.destroy_process_group()
    check.summary(f"test_errors ({ranks} ranks)")


if __name__ == "__main__":
    main()
