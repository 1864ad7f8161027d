"""A program may end with calls still queued and its group never destroyed; it must exit cleanly.

    collrun -n 2 /usr/bin/python3 tests/python/test_exit_in_flight.py

torch_collective drains every live group at interpreter exit (an atexit handler). Before it did,
a worker still running when the interpreter finalized took the GIL from a finalizing interpreter,
which ends the thread with a forced unwind: "terminate called without an active exception" and
status 134, in 8 of 10 runs of this program on torch 2.15.

Every rank queues 32 asynchronous all-reduces of 1 MiB and waits for none. Then rank 0 queues an
isend to rank 1 and exits at once; rank 1 receives it (so the queue ran to its end on rank 0),
checks the value, and exits with its own all-reduces still queued. A crash at exit fails the run
through collrun's status.
"""
import torch
import torch.distributed as dist

from common import Checker, start_process_group

CALLS = 32
COUNT = 1 << 18


def main():
    rank, ranks, check = start_process_group()
    tensors = [torch.full((COUNT,), float(rank + i)) for i in range(CALLS)]
    works = [dist.all_reduce(t, async_op=True) for t in tensors]
    if rank == 0:
        dist.isend(torch.arange(COUNT, dtype=torch.float32), 1)
        check.summary("test_exit_in_flight")
    elif rank == 1:
        received = torch.zeros(COUNT)
        dist.irecv(received, 0).wait()
        check.equal(received, torch.arange(COUNT, dtype=torch.float32), "what rank 0 sent as it exited")
        check.summary("test_exit_in_flight")
    del works  # the queue alone holds the calls now


if __name__ == "__main__":
    main()
