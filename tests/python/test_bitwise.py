"""all_reduce with BAND, BOR and BXOR, against gloo on the same inputs.

    collrun -n 2 PYTHON tests/python/test_bitwise.py      (and -n 3)

The backend composes them from an all-gather and a fold on each rank (the library has no bitwise
reduction). Every integer type and bool, sizes 0 to 1031, non-contiguous tensors: the result must
equal the reference each rank computes from every rank's input, and gloo's result where gloo takes
the type; floating-point tensors must raise the same exception type as gloo.
"""
import functools

import torch
import torch.distributed as dist

from common import noncontiguous
from gloo_parity import run_against_gloo, same_exception_type

OPS = {dist.ReduceOp.BAND: torch.bitwise_and, dist.ReduceOp.BOR: torch.bitwise_or,
       dist.ReduceOp.BXOR: torch.bitwise_xor}
INT_DTYPES = [torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64, torch.bool]
SIZES = [1, 13, 0, 1031]


def bits_of(rank, count, dtype):
    """Rank `rank`'s input: varied bit patterns (negative values too), known to every rank."""
    index = torch.arange(count, dtype=torch.int64)
    values = (index * 37 + rank * 11 + 5) * (rank + 3) % 251 - (0 if dtype == torch.uint8 else 100)
    if dtype == torch.bool:
        return (values % (rank + 2)) == 0
    return values.to(dtype)


def reference(ranks, count, dtype, op):
    return functools.reduce(OPS[op], [bits_of(r, count, dtype) for r in range(ranks)])


def reduce_on(group, rank, count, dtype, op, contiguous=True):
    tensor = bits_of(rank, count, dtype)
    if not contiguous:
        tensor = noncontiguous(tensor)
    dist.all_reduce(tensor, op=op, group=group)
    return tensor


def test_values(check, twin, rank, ranks):
    for dtype in INT_DTYPES:
        for op in OPS:
            for count in SIZES:
                expected = reference(ranks, count, dtype, op)
                ours, gloo = twin.both(lambda group: reduce_on(group, rank, count, dtype, op))
                what = f"all_reduce {op} {dtype} x{count}"
                check.true(ours[0] == "ok", f"{what}: raised {ours[1:]}")
                check.equal(ours[1], expected, what)
                # Where gloo takes the type, it must agree with us.
                if gloo[0] == "ok":
                    check.equal(ours[1], gloo[1], f"{what}: against gloo")
            tensor = reduce_on(None, rank, 1031, dtype, op, contiguous=False)
            check.equal(tensor, reference(ranks, 1031, dtype, op), f"all_reduce {op} {dtype} non-contiguous")


def test_async(check, twin, rank, ranks):
    tensor = bits_of(rank, 64, torch.int32)
    work = dist.all_reduce(tensor, op=dist.ReduceOp.BOR, async_op=True)
    future_value = work.get_future().wait()[0]
    work.wait()
    expected = reference(ranks, 64, torch.int32, dist.ReduceOp.BOR)
    check.equal(tensor, expected, "all_reduce BOR async_op")
    check.equal(future_value, expected, "all_reduce BOR Future value")


def test_refusals(check, twin, rank, ranks):
    for dtype in [torch.float32, torch.float64]:
        for op in OPS:
            ours, gloo = twin.both(lambda group: reduce_on(group, rank, 4, dtype, op))
            same_exception_type(check, ours, gloo, f"all_reduce {op} {dtype}")
    # Both groups are still usable afterwards.
    for group in [None, twin.group]:
        tensor = torch.ones(3)
        dist.all_reduce(tensor, group=group)
        check.equal(tensor, torch.full((3,), float(dist.get_world_size())), "all_reduce after a refusal")


def main():
    run_against_gloo("test_bitwise", [test_values, test_async, test_refusals])


if __name__ == "__main__":
    main()
