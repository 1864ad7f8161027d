"""Surviving a lost rank on the "collective" backend (docs/pytorch.md, "Surviving a lost rank").

    try:
        loss = train_step(model, batch)
    except RuntimeError:                        # a rank died, or stopped: the call failed or timed out
        group = torch_collective.shrink_group() # the survivors agree on who is gone and go on without them
        model = DistributedDataParallel(module, process_group=group)
        ...                                     # restore the last checkpoint, then continue

shrink_group works on every torch line: on torch 2.x it hands torch's own shrink_group the ranks
the survivors agreed on (so torch's bookkeeping follows), on 1.13 it installs the new group itself.
"""
import torch
import torch.distributed as dist
import torch.distributed.distributed_c10d as c10d

from . import _C

__all__ = ["shrink_group", "revoke", "dump_trace"]


def _backend_of(group):
    """The object torch_collective._C takes: the group on torch 1.x, its CPU backend on 2.x."""
    if hasattr(group, "_get_backend"):
        return group._get_backend(torch.device("cpu"))
    return group


def _target(group):
    return group if group is not None else c10d._get_default_group()


def revoke(group=None):
    """collCommRevoke: every pending and later call of the group fails, on every rank ("revoked")."""
    _C.revoke(_backend_of(_target(group)))


def dump_trace(path="", group=None):
    """Writes this rank's flight recorder (its last calls on the group) to path, or COLL_TRACE_DIR."""
    _C.dump_trace(_backend_of(_target(group)), path)


def shrink_group(ranks_to_exclude=(), group=None, abort=True):
    """The group of the surviving ranks, without a new rendezvous.

    Every surviving rank calls it. ranks_to_exclude (ranks of `group`) may be what this rank knows,
    or nothing: the survivors agree on the union of every caller's list and the ranks the library
    finds gone (exited, or silent past COLL_AGREE_TIMEOUT_MS), so ranks that saw different
    failures still build one group. abort=True revokes the group first, which ends a call still
    waiting for the lost rank on every survivor. Survivors keep their order. Shrinking the default
    group makes the new group the default one (as torch 2.x's shrink_group does) and renumbers
    the ranks 0..n-1; other groups that counted the lost ranks are left to the program.
    """
    target = _target(group)
    backend = _backend_of(target)
    agreed = list(_C.prepare_shrink(backend, [int(r) for r in ranks_to_exclude], bool(abort)))
    if not agreed:
        _C.take_shrunk(backend, [])
        raise RuntimeError("torch_collective.shrink_group: the survivors found no rank to leave out")
    if hasattr(dist, "shrink_group") and getattr(backend, "supports_shrinking", False):
        flags = c10d.SHRINK_ABORT if abort else c10d.SHRINK_DEFAULT
        return dist.shrink_group(agreed, group=group, shrink_flags=flags)
    return _adopt_shrunk(target, _C.take_shrunk(backend, agreed), agreed)


def _adopt_shrunk(target, new_pg, agreed):
    """torch 1.x: puts the survivors' group where the old one was in torch's registry."""
    store = c10d._pg_map.get(target, (None, None))[1]
    old_ranks = c10d._pg_group_ranks.get(target, {})
    is_default = target is c10d._get_default_group()
    for table in (c10d._pg_map, c10d._pg_names, c10d._pg_group_ranks):
        table.pop(target, None)
    if is_default:
        c10d._update_default_pg(new_pg)
        ranks = {r: r for r in range(new_pg.size())}
    else:
        survivors = sorted((g for g, r in old_ranks.items() if r not in agreed), key=lambda g: old_ranks[g])
        ranks = {g: i for i, g in enumerate(survivors)}
    c10d._pg_map[new_pg] = ("collective", store)
    c10d._pg_names[new_pg] = f"collective_shrunk_{id(new_pg):x}"
    c10d._pg_group_ranks[new_pg] = ranks
    return new_pg
