"""libcollective as a torch.distributed backend.

    import torch_collective                 # registers the backend name "collective"
    torch.distributed.init_process_group("collective")

Everything else is torch.distributed as usual (all_reduce, all_gather, DistributedDataParallel,
new_group, isend/irecv, ...), on CPU tensors and, where the extension was built with CUDA support
(torch_collective.cuda_support), CUDA tensors. After a lost rank, shrink_group gives the survivors'
group (revoke and dump_trace beside it: torch_collective/fault.py). See docs/pytorch.md.
"""
from datetime import timedelta
import inspect

import torch  # noqa: F401  (loads the libraries the extension links against)
import torch.distributed as dist
import torch.distributed.distributed_c10d as c10d

from . import _C, flight_recorder
from .fault import dump_trace, revoke, shrink_group

__all__ = ["BACKEND_NAME", "create_backend", "cuda_support", "dump_trace", "revoke", "shrink_group"]

BACKEND_NAME = "collective"

# Whether this build takes CUDA tensors: torch was a CUDA build and the CUDA toolkit was found
# when the extension was built.
cuda_support = bool(getattr(_C, "cuda_support", False))

# Rank 0's unique id travels through the group's store under this key. torch gives each group
# (and each device's backend on 2.x) a store of its own prefix, so one key serves them all.
_UNIQUE_ID_KEY = "torch_collective/unique_id"

_MAX_TIMEOUT_MS = 2**31 - 1


def _timeout_ms(timeout):
    """The communicator's timeout in ms for torch's `timeout`; -1 keeps the library's own.

    torch passes its 30-minute default when the program gave none; then COLL_TIMEOUT_MS (or the
    library's 300 s default) decides, as it does for programs that call libcollective directly.
    """
    if timeout is None or timeout == c10d.default_pg_timeout:
        return -1
    if not isinstance(timeout, timedelta):
        raise TypeError(f"torch_collective: timeout must be a datetime.timedelta, got {type(timeout).__name__}")
    milliseconds = int(timeout.total_seconds() * 1000)
    return max(1, min(milliseconds, _MAX_TIMEOUT_MS))


def create_backend(store, rank, world_size, timeout):
    """The creator function torch calls for init_process_group and new_group.

    Rank 0 makes a libcollective unique id and shares it through torch's store; every rank then
    joins the communicator it names.
    """
    if rank == 0:
        unique_id = _C.get_unique_id()
        store.set(_UNIQUE_ID_KEY, unique_id)
    else:
        unique_id = store.get(_UNIQUE_ID_KEY)
    return _C.create_backend(rank, world_size, unique_id, _timeout_ms(timeout), store)


def _register():
    if BACKEND_NAME.upper() in getattr(dist.Backend, "_plugins", {}):
        return
    # torch 2.x backends are per device: one backend object serves both where it takes CUDA tensors.
    if "devices" in inspect.signature(dist.Backend.register_backend).parameters:
        devices = ["cpu", "cuda"] if cuda_support else ["cpu"]
        dist.Backend.register_backend(BACKEND_NAME, create_backend, devices=devices)
    else:
        dist.Backend.register_backend(BACKEND_NAME, create_backend)
    flight_recorder.install(BACKEND_NAME)


_register()
