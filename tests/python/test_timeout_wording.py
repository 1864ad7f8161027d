"""A timed-out barrier or collective says "Timed out", as torch's backends do, with a space on
either side as torch's own tests match it (" (Timed out|closed|timeout) "), and keeps the
library's detail; the exception type is gloo's on the same program.

    collrun -n 2 PYTHON tests/python/test_timeout_wording.py      (and -n 3)

Rank 0 calls the operation on a group with a 2 s timeout that the other ranks never call on.
"""
import re
import time
from datetime import timedelta

import torch
import torch.distributed as dist

from common import start_process_group
from gloo_parity import same_exception_type

OPERATIONS = {
    "barrier": lambda group: dist.barrier(group=group),
    "all_reduce": lambda group: dist.all_reduce(torch.ones(3), group=group),
    # From rank 1, which never calls: rank 0 waits for it. (Rank 0 as the source may return at
    # once: a small broadcast's root publishes its input and goes on, as an eager send does.)
    "broadcast": lambda group: dist.broadcast(torch.ones(3), src=1, group=group),
}


def timed_out(group, operation):
    """(outcome, seconds) of rank 0's call that nobody joins."""
    if dist.get_rank() != 0:
        return None, 0.0
    start = time.monotonic()
    try:
        OPERATIONS[operation](group)
        return ("ok",), time.monotonic() - start
    except Exception as error:  # the type is compared with gloo's
        return ("raised", type(error), str(error)), time.monotonic() - start


def test_wording(check, rank, ranks):
    # Every group first: making one waits for every rank, for at most the same 2 s.
    groups = {(backend, operation): dist.new_group(list(range(ranks)), timeout=timedelta(seconds=2), backend=backend)
              for operation in OPERATIONS for backend in ("collective", "gloo")}
    for operation in OPERATIONS:
        ours, seconds = timed_out(groups["collective", operation], operation)
        gloo, _ = timed_out(groups["gloo", operation], operation)
        if rank == 0:
            same_exception_type(check, ours, gloo, f"{operation} timing out")
            check.true("Timed out" in gloo[2], f"gloo's {operation} says Timed out: {gloo[2]}")
            check.true("Timed out" in ours[2], f"our {operation} says Timed out: {ours[2]}")
            check.true(re.search(" (Timed out|closed|timeout) ", ours[2]) is not None,
                       f"our {operation}'s message as torch's tests match it: {ours[2]}")
            for detail in ("timed out after 2000 ms", "[collTimeout]"):
                check.true(detail in ours[2], f"our {operation} keeps the detail {detail!r}: {ours[2]}")
            check.true(1.5 < seconds < 10, f"{operation} timed out after {seconds:.1f} s, expected about 2 s")
    # The others wait here, on the world group, until rank 0 is done: a rank that left would
    # reset gloo's connections and turn its timeouts into connection errors.
    dist.barrier()


def main():
    rank, ranks, check = start_process_group()
    test_wording(check, rank, ranks)
    dist.destroy_process_group()
    check.summary("test_timeout_wording")


if __name__ == "__main__":
    main()
