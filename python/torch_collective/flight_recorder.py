"""The backend's entries in torch's Flight Recorder (torch 2.15 and later).

Torch records the calls of a backend that does not record itself through a generic hook, attached
to each group as it is made (distributed_c10d._maybe_attach_flight_recorder). The hook's pre-, post-
and completion callbacks cost more than a small call of this backend (docs/performance.md), so
where the extension can record natively (flight_recording.h) a group served by this backend alone
records its own calls instead: the same entries, in the same instance ("collective"), read with the
same dump functions (torch._C._distributed_c10d._dump_fr_trace_json(..., backend="collective")).
Groups that mix this backend with another on other devices keep torch's hook, and so does every
group with TORCH_COLLECTIVE_NATIVE_FR=0 (for comparison, or should a torch release change the
recorder's layout).
"""
import os

import torch.distributed.distributed_c10d as c10d

from . import _C


def _served_by(backend_name, pg, backend_config):
    """This group's collective backends (one per device type, usually one object for all) where
    the collective backend serves every device of the group, else an empty list.

    Under TORCH_DISTRIBUTED_DEBUG=DETAIL torch wraps the backend (_ProcessGroupWrapper), which
    hands every call on to it: the calls are recorded where they arrive.
    """
    device_backends = backend_config.get_device_backend_map()
    if not device_backends or any(name != backend_name for name in device_backends.values()):
        return []
    backends = {}
    for device_type in pg._device_types:
        backend = pg._get_backend(device_type)
        backend = getattr(backend, "wrapped_pg", backend)
        if not _C.is_collective_backend(backend):
            return []
        backends[id(backend)] = backend
    return list(backends.values())


def install(backend_name):
    """Makes groups of `backend_name` record natively, where torch and the extension allow it."""
    attach_hook = getattr(c10d, "_maybe_attach_flight_recorder", None)
    if attach_hook is None or not getattr(_C, "records_flight_recorder", False):
        return
    if os.environ.get("TORCH_COLLECTIVE_NATIVE_FR", "1") == "0":
        return
    if getattr(attach_hook, "_torch_collective", False):
        return

    def attach(pg, backend_config, global_ranks):
        backends = _served_by(backend_name, pg, backend_config)
        if not backends:
            return attach_hook(pg, backend_config, global_ranks)
        global_ranks = list(global_ranks)
        group_rank = pg.rank()
        global_rank = global_ranks[group_rank] if 0 <= group_rank < len(global_ranks) else -1
        # Off (TORCH_FR_BUFFER_SIZE=0) the recorder takes nothing, and neither would the hook.
        for backend in backends:
            _C.attach_flight_recorder(backend, pg.group_name, pg.group_desc, global_ranks, global_rank)
        return None

    attach._torch_collective = True
    c10d._maybe_attach_flight_recorder = attach
