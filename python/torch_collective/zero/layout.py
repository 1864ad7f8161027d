"""Where each parameter lives in the flat buffer that ZeRO partitions.

Parameters are laid out module by module (each module's own parameters together, in
named_parameters order), back to back, so that one module's parameters are one contiguous range
that stage 3 gathers in one call. A parameter shared by two modules appears once. The partition
(which rank owns which elements) is libcollective's collZeroPartitionInit, independent of
parameter boundaries.

A leaf module owns its whole subtree's parameters (one range, gathered together in stage 3), for
modules whose forward reads their children's parameters without calling the children: torch's
MultiheadAttention (its out_proj) and transformer layers (their inference fast path) always, and
whatever set_leaf_modules marks (DeepSpeed's set_z3_leaf_modules). The layout is the same either
way: a subtree's parameters are consecutive in module order.
"""
from dataclasses import dataclass

import torch

from .. import _C

# Modules whose forward reads their children's parameters directly.
DEFAULT_LEAF_CLASSES = (torch.nn.MultiheadAttention, torch.nn.TransformerEncoderLayer, torch.nn.TransformerDecoderLayer)


def set_leaf_modules(model, classes):
    """Marks every module of `model` that is an instance of one of `classes` as a leaf: stage 3
    gathers its whole subtree's parameters around its forward. Returns the modules marked."""
    classes = tuple(classes)
    marked = [m for m in model.modules() if isinstance(m, classes)]
    for module in marked:
        module._zero_leaf = True
    return marked


def is_leaf(module):
    return getattr(module, "_zero_leaf", False) or isinstance(module, DEFAULT_LEAF_CLASSES)


@dataclass
class ParamSlot:
    name: str
    param: object      # the torch.nn.Parameter
    offset: int        # first element in the flat buffer
    numel: int
    shape: tuple


class FlatLayout:
    def __init__(self, module, world_size, rank, only=None):
        """Lays out module's trainable parameters (or only those in `only`, when given)."""
        wanted = None if only is None else {id(p) for p in only}
        self.slots = []
        self.module_ranges = {}  # module -> list of slots of its own parameters
        seen = {}
        names = {id(p): n for n, p in module.named_parameters()}
        offset = 0
        inside_leaf = set()
        for submodule in module.modules():
            if id(submodule) in inside_leaf:
                continue
            leaf = is_leaf(submodule)
            if leaf:
                inside_leaf.update(id(m) for m in submodule.modules() if m is not submodule)
            own = []
            for _, param in submodule.named_parameters(recurse=leaf):
                if not param.requires_grad or (wanted is not None and id(param) not in wanted):
                    continue
                if id(param) in seen:
                    own.append(seen[id(param)])
                    continue
                slot = ParamSlot(names[id(param)], param, offset, param.numel(), tuple(param.shape))
                seen[id(param)] = slot
                self.slots.append(slot)
                own.append(slot)
                offset += slot.numel
            if own:
                self.module_ranges[submodule] = own
        self.total = offset
        self.partition = _C.ZeroPartition(offset, world_size, rank)
        self.by_param = seen

    @property
    def padded(self):
        return self.partition.padded

    def shard_range(self):
        return self.partition.offset, self.partition.offset + self.partition.shard

    def ranges_of(self, slots):
        """The contiguous flat ranges [begin, end) that `slots` cover, merged, in order."""
        ranges = []
        for slot in sorted(slots, key=lambda s: s.offset):
            begin, end = slot.offset, slot.offset + slot.numel
            if ranges and ranges[-1][1] == begin:
                ranges[-1][1] = end
            else:
                ranges.append([begin, end])
        return [tuple(r) for r in ranges]

    def describe(self):
        """What a checkpoint records to recognise this model: names, shapes and offsets."""
        return [{"name": s.name, "shape": list(s.shape), "offset": s.offset} for s in self.slots]
