"""What a receive from any source costs the sends that never meet one: counted store operations.

    collrun -n 2 PYTHON tests/python/test_recv_any_source_cost.py                 (and -n 3)
    COLL_TRANSPORTS=^shm collrun -n 2 PYTHON tests/python/test_recv_any_source_cost.py --store

The process group is built on a store that counts every operation its backend makes. Rank 1
sends rank 0 50 messages; rank 0 takes 49 by name and the last from any source. Where the ranks
share one host's memory the library finds the sender (collRecvAny), so neither rank may touch the
store; with --store (shared memory off, so the backend must count sends in the store) each send
costs one add, and the receive from any source still finds rank 1.
"""
import argparse
import os
from datetime import timedelta

import torch
import torch.distributed as dist

from common import Checker

SENDS = 50


class CountingStore(dist.Store):
    """A TCPStore behind a store that counts what is asked of it."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner
        self.operations = 0

    def _count(self):
        self.operations += 1

    def set(self, key, value):
        self._count()
        self.inner.set(key, value)

    def get(self, key):
        self._count()
        return self.inner.get(key)

    def add(self, key, value):
        self._count()
        return self.inner.add(key, value)

    def compare_set(self, key, expected, desired):
        self._count()
        return self.inner.compare_set(key, expected, desired)

    def delete_key(self, key):
        self._count()
        return self.inner.delete_key(key)

    def num_keys(self):
        self._count()
        return self.inner.num_keys()

    def check(self, keys):
        self._count()
        return self.inner.check(keys)

    def wait(self, keys, timeout=None):
        self._count()
        if timeout is None:
            self.inner.wait(keys)
        else:
            self.inner.wait(keys, timeout)

    def set_timeout(self, timeout):
        self.inner.set_timeout(timeout)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--store", action="store_true",
                        help="shared memory is off (COLL_TRANSPORTS=^shm): expect the store's counting")
    args = parser.parse_args()
    import torch_collective  # noqa: F401  (registers the "collective" backend)

    rank, ranks = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    # A file store, named by the launcher's port (one job's): no second port to collide with a
    # neighbour's under a loaded CI. Torch removes the file when the last rank lets go of it.
    inner = dist.FileStore(f"/tmp/collective-any-source-cost-{os.environ['MASTER_PORT']}", ranks)
    inner.set_timeout(timedelta(seconds=60))
    store = CountingStore(inner)
    torch.set_num_threads(1)
    dist.init_process_group("collective", store=store, rank=rank, world_size=ranks)
    check = Checker()
    dist.barrier()
    before = store.operations
    if rank == 1:
        for index in range(SENDS):
            dist.send(torch.full((3,), float(index)), dst=0)
    elif rank == 0:
        tensor = torch.zeros(3)
        for index in range(SENDS - 1):
            dist.recv(tensor, src=1)
            check.equal(tensor, torch.full((3,), float(index)), f"named receive {index}")
        source = dist.recv(tensor)
        check.true(source == 1, f"the receive from any source reported rank {source}, expected 1")
        check.equal(tensor, torch.full((3,), float(SENDS - 1)), "the message received from any source")
    operations = store.operations - before
    if args.store:
        if rank == 1:
            check.true(operations >= SENDS, f"{SENDS} sends counted in the store made {operations} store operations")
    else:
        check.true(operations == 0, f"rank {rank}: {SENDS} sends and their receives (the last from any source) "
                                    f"made {operations} store operations, expected none")
    dist.barrier()
    dist.destroy_process_group()
    check.summary("test_recv_any_source_cost" + (" --store" if args.store else ""))


if __name__ == "__main__":
    main()
