"""The coalesced collectives: several tensors in one call, on every torch line.

    collrun -n 2 PYTHON tests/python/test_coalesced.py      (and -n 3)

all_reduce_coalesced and all_gather_coalesced (both torch lines), and on torch 2.x the
_coalescing_manager blocks of all_reduce, all_gather_into_tensor and reduce_scatter_tensor that
FSDP and DeepSpeed use (one backend call per block). Tensors of different, odd and zero sizes,
every type, every op; outputs poisoned first and checked against references each rank computes.
"""
import warnings

import torch
import torch.distributed as dist

from common import DTYPES, POISON, poisoned, rank_input, reduce_reference, start_process_group

warnings.filterwarnings("ignore", message=r".*will be deprecated")  # the *_coalesced functions

SIZES = [1, 13, 0, 1031]
OPS = [dist.ReduceOp.SUM, dist.ReduceOp.PRODUCT, dist.ReduceOp.MIN, dist.ReduceOp.MAX, dist.ReduceOp.AVG]


def expected_reduction(ranks, dtype, op, count, offset):
    return reduce_reference([rank_input(r, count, dtype, offset) for r in range(ranks)], op)


def test_all_reduce_coalesced(check, rank, ranks):
    for dtype in DTYPES:
        for op in OPS:
            tensors = [rank_input(rank, count, dtype, offset=i * 100) for i, count in enumerate(SIZES)]
            dist.all_reduce_coalesced(tensors, op=op)
            for i, count in enumerate(SIZES):
                check.equal(tensors[i], expected_reduction(ranks, dtype, op, count, i * 100),
                            f"all_reduce_coalesced {dtype} {op} tensor {i} x{count}")


def test_all_gather_coalesced(check, rank, ranks):
    for dtype in DTYPES + [torch.bool]:
        inputs = [rank_input(rank, count, torch.int64, offset=i).to(dtype) for i, count in enumerate(SIZES)]
        # torch's layout: outputs[r][i] receives rank r's input i.
        outputs = [[poisoned(count, torch.int64).to(dtype) for count in SIZES] for _ in range(ranks)]
        dist.all_gather_coalesced(outputs, inputs)
        for i, count in enumerate(SIZES):
            for r in range(ranks):
                check.equal(outputs[r][i], rank_input(r, count, torch.int64, offset=i).to(dtype),
                            f"all_gather_coalesced {dtype} tensor {i} from {r}")


def test_mixed_types_refused(check, rank, ranks):
    """Torch refuses mixed types before the backend sees them (RuntimeError on 1.13, ValueError on
    2.x); the backend's own check says the same for callers that reach it directly."""
    try:
        dist.all_reduce_coalesced([torch.ones(3), torch.ones(3, dtype=torch.float64)])
    except (RuntimeError, ValueError) as error:
        check.true("different dtypes" in str(error) or "mixes tensors of type Float and Double" in str(error),
                   f"mixed types: {error}")
        return
    check.fail("all_reduce_coalesced of mixed types: no RuntimeError")


def test_coalescing_manager(check, rank, ranks):
    """torch 2.x: what FSDP and DeepSpeed ZeRO-3 issue, one block of several tensors."""
    for dtype in [torch.float32, torch.bfloat16, torch.int32]:
        tensors = [rank_input(rank, count, dtype, offset=i) for i, count in enumerate(SIZES)]
        with dist._coalescing_manager(async_ops=True) as manager:
            for tensor in tensors:
                dist.all_reduce(tensor)
        manager.wait()
        for i, count in enumerate(SIZES):
            check.equal(tensors[i], expected_reduction(ranks, dtype, dist.ReduceOp.SUM, count, i),
                        f"coalesced all_reduce {dtype} tensor {i}")

        gathered = [poisoned(ranks * count, dtype) for count in SIZES]
        with dist._coalescing_manager():
            for i, count in enumerate(SIZES):
                dist.all_gather_into_tensor(gathered[i], rank_input(rank, count, dtype, offset=i))
        for i, count in enumerate(SIZES):
            expected = torch.cat([rank_input(r, count, dtype, offset=i) for r in range(ranks)])
            check.equal(gathered[i], expected, f"coalesced all_gather_into_tensor {dtype} tensor {i}")

        scattered = [poisoned(count, dtype) for count in SIZES]
        with dist._coalescing_manager():
            for i, count in enumerate(SIZES):
                dist.reduce_scatter_tensor(scattered[i], rank_input(rank, ranks * count, dtype, offset=i))
        for i, count in enumerate(SIZES):
            expected = reduce_reference([rank_input(r, ranks * count, dtype, offset=i) for r in range(ranks)],
                                        dist.ReduceOp.SUM)[rank * count:(rank + 1) * count]
            check.equal(scattered[i], expected, f"coalesced reduce_scatter_tensor {dtype} tensor {i}")
    assert POISON  # outputs above start poisoned: a tensor the call skipped cannot pass


def main():
    rank, ranks, check = start_process_group()
    test_all_reduce_coalesced(check, rank, ranks)
    test_all_gather_coalesced(check, rank, ranks)
    test_mixed_types_refused(check, rank, ranks)
    if hasattr(dist, "_coalescing_manager") and torch.__version__ >= "2.1":
        test_coalescing_manager(check, rank, ranks)
    else:
        print(f"rank {rank}: torch {torch.__version__} has no _coalescing_manager with these operations; "
              "that part runs on torch 2.x", flush=True)
    dist.destroy_process_group()
    check.summary(f"test_coalesced ({ranks} ranks)")


if __name__ == "__main__":
    main()
