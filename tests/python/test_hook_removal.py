"""Removing torch's Flight Recorder hook while the backend completes calls does not deadlock.

    collrun -n 2 PYTHON tests/python/test_hook_removal.py      (torch 2.15 and later)

FlightRecorderHook::remove() holds the hook's lock while it unregisters the hook's completion
hook from the backend, and that completion hook takes the same lock. A backend that called its
hooks while holding the lock of its hook table deadlocked against it (completion_hooks.h). Each
round issues a batch of asynchronous calls, then removes a hook and attaches a new one while the
backend's worker completes them. (Not from a second thread while calls are issued: torch's
ProcessGroup does not guard its pre/post hook list against that.) A deadlock holds the GIL
(remove() does not let it go), so faulthandler's watchdog thread ends the run.
Exits 77 (SKIPPED) on torch lines without the hook.
"""
import faulthandler
import os
import sys
from datetime import timedelta

os.environ.setdefault("TORCH_FR_BUFFER_SIZE", "200")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import torch_collective  # noqa: E402,F401

CALLS = 800
BATCH = 16


def main():
    if not hasattr(torch._C._distributed_c10d, "FlightRecorderHook"):
        print("SKIPPED: this torch has no FlightRecorderHook for backends that do not record themselves")
        return 77
    from torch._C._distributed_c10d import FlightRecorderHook

    faulthandler.dump_traceback_later(120, exit=True)
    dist.init_process_group("collective", timeout=timedelta(seconds=60))
    rank, size = dist.get_rank(), dist.get_world_size()
    group, ranks = dist.group.WORLD, list(range(size))
    hook = FlightRecorderHook.attach(group, ranks)
    tensor = torch.ones(2)
    for _ in range(CALLS // BATCH):
        works = [dist.all_reduce(tensor, async_op=True) for _ in range(BATCH)]
        while not works[-1].is_completed():
            hook.remove()
            hook = FlightRecorderHook.attach(group, ranks)
        for work in works:
            work.wait()
    hook.remove()
    faulthandler.cancel_dump_traceback_later()
    dist.destroy_process_group()
    print(f"rank {rank}: {CALLS} calls completed while hooks were removed and attached")
    return 0


if __name__ == "__main__":
    sys.exit(main())
