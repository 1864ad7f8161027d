"""Shared by the tests of the PyTorch backend (tests/python).

Every rank can compute every other rank's input: `rank_input(rank, count, dtype, offset)` is a
formula of the rank and the element index, so each rank checks its outputs against references it
computes itself. Values stay small (-1..3 for signed types, 1..5 for unsigned) so that sums,
products, minima and maxima over a few ranks are exact in every type, float16 and bfloat16 included.
"""
import os
import sys
import warnings

import torch
import torch.distributed as dist

import torch_collective  # noqa: F401  (registers the "collective" backend)

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16,
          torch.int8, torch.uint8, torch.int32, torch.int64]
FLOAT_DTYPES = {torch.float32, torch.float64, torch.float16, torch.bfloat16}

# What a call must overwrite: outputs are filled with it first, and no reference ever equals it.
POISON = 77


def rank_input(rank, count, dtype, offset=0):
    """Rank `rank`'s input of `count` elements, starting at element `offset` of its sequence."""
    index = torch.arange(offset, offset + count, dtype=torch.int64)
    values = (rank * 7 + index * 3 + 1) % 5 + 1
    if dtype != torch.uint8:
        values = values - 2
    return values.to(dtype)


def poisoned(count, dtype):
    return torch.full((count,), POISON, dtype=dtype)


def noncontiguous(tensor):
    """A strided view with the same values (every other element of a buffer twice as long)."""
    wide = torch.full((tensor.numel() * 2,), POISON, dtype=tensor.dtype)
    view = wide[::2]
    view.copy_(tensor)
    assert not view.is_contiguous()
    return view


def reduce_reference(tensors, op):
    """What reducing these tensors with torch.distributed's `op` gives, in the tensors' type."""
    dtype = tensors[0].dtype
    wide = torch.stack([t.to(torch.float64) for t in tensors])
    if op == dist.ReduceOp.SUM:
        result = wide.sum(0)
    elif op == dist.ReduceOp.PRODUCT:
        result = wide.prod(0)
    elif op == dist.ReduceOp.MIN:
        result = wide.min(0).values
    elif op == dist.ReduceOp.MAX:
        result = wide.max(0).values
    elif op == dist.ReduceOp.AVG:
        result = wide.sum(0) / len(tensors)
        if dtype not in FLOAT_DTYPES:  # the library's integer average truncates, as C division does
            result = torch.trunc(result)
    else:
        raise ValueError(f"no reference for {op}")
    return result.to(dtype)


class Checker:
    """Counts checks; a failed one prints what differs and ends the rank with status 1."""

    def __init__(self):
        self.rank = dist.get_rank() if dist.is_initialized() else int(os.environ.get("RANK", "0"))
        self.passed = 0

    def equal(self, actual, expected, what):
        try:
            if actual.dtype in FLOAT_DTYPES:
                torch.testing.assert_close(actual, expected, equal_nan=False)
            else:
                assert actual.dtype == expected.dtype, f"dtype {actual.dtype} != {expected.dtype}"
                assert torch.equal(actual, expected), "values differ"
        except AssertionError as error:
            self.fail(f"{what}: {error}\n  actual   {actual.flatten()[:16]}\n  expected {expected.flatten()[:16]}")
        self.passed += 1

    def true(self, condition, what):
        if not condition:
            self.fail(what)
        self.passed += 1

    def fail(self, what):
        print(f"rank {self.rank}: FAILED: {what}", file=sys.stderr, flush=True)
        os._exit(1)

    def summary(self, name):
        print(f"rank {self.rank}: {name}: {self.passed} passed, 0 failed", flush=True)


def start_process_group(threads=1):
    """Joins the "collective" process group (env://, from the launcher) with `threads` intra-op
    threads per rank (ranks share the machine's cores); returns (rank, ranks, Checker())."""
    torch.set_num_threads(threads)
    dist.init_process_group("collective")
    return dist.get_rank(), dist.get_world_size(), Checker()


def check_same_on_every_rank(check, tensor, what):
    """Every rank holds the same `tensor` (parameters after data-parallel training, say)."""
    gathered = [torch.empty_like(tensor) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, tensor)
    for rank, theirs in enumerate(gathered):
        check.equal(theirs, tensor, f"{what} of rank {rank}")


def _available(*names):
    return [getattr(dist, name) for name in names if hasattr(dist, name)]


# The flat forms under every name this torch has: all_gather_into_tensor / reduce_scatter_tensor
# (torch 2.x, and 1.13 already), _all_gather_base / _reduce_scatter_base (1.13; deprecated in 2.x).
warnings.filterwarnings("ignore", message=r"torch\.distributed\._(all_gather|reduce_scatter)_base is a private")
FLAT_ALL_GATHERS = _available("all_gather_into_tensor", "_all_gather_base")
FLAT_REDUCE_SCATTERS = _available("reduce_scatter_tensor", "_reduce_scatter_base")
