"""Destroying a collective group while its worker drops the last reference to tensors must not
hang. Python holds the GIL when it destroys a group; the worker needs the GIL to free a tensor
that has a Python object; the group's destructor waits for the worker. (This deadlocked about one
run in fifteen of examples/collectives.py before the destructor let go of the GIL.)

    collrun -n 2 /usr/bin/python3 tests/python/test_group_teardown.py

Each round creates a group, queues asynchronous all-reduces on temporaries (only the queued call
holds them), drops every Python reference, and destroys the group at once; 40 rounds. A hang
is caught by ctest's timeout, and by a watchdog here that fails the run after 60 s.
"""
import faulthandler
import sys

import torch
import torch.distributed as dist

import torch_collective  # noqa: F401 (registers the backend)


def main():
    faulthandler.dump_traceback_later(60, exit=True)  # a hang prints where it is and fails
    dist.init_process_group("gloo")
    rank, size = dist.get_rank(), dist.get_world_size()
    for round_index in range(40):
        group = dist.new_group(list(range(size)), backend="collective")
        works = [dist.all_reduce(torch.full((1000 + round_index,), float(rank)), group=group, async_op=True)
                 for _ in range(4)]
        del works  # now only the queued calls hold their tensors
        dist.destroy_process_group(group)
        del group  # the last reference: the group's destructor runs here, under the GIL
    dist.barrier()
    print(f"rank {rank}: 40 groups created and destroyed with calls in flight")
    dist.destroy_process_group()
    faulthandler.cancel_dump_traceback_later()
    return 0


if __name__ == "__main__":
    sys.exit(main())
