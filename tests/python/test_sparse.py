"""all_reduce of sparse COO tensors, against gloo on the same inputs.

    collrun -n 2 PYTHON tests/python/test_sparse.py      (and -n 3)

Like gloo, the backend gathers every rank's indices and values and coalesces them: the result
(indices, values, sizes, coalesced or not) must equal gloo's and the dense reference. Covered:
overlapping and disjoint indices, a rank with no non-zeros, uncoalesced inputs, hybrid tensors
(sparse rows of dense values, as nn.Embedding(sparse=True) gradients are), several types, a
DDP step with a sparse embedding; ops other than SUM raise the same exception type as gloo's.
"""
import torch
import torch.distributed as dist

from gloo_parity import run_against_gloo, same_exception_type


def sparse_input(rank, ranks, dtype, hybrid=False, duplicates=False):
    """Rank `rank`'s sparse tensor, known to every rank: indices overlap between neighbours; the
    last rank has none when there are more than two ranks."""
    rows = 11
    if rank == ranks - 1 and ranks > 2:
        index = torch.zeros((1, 0), dtype=torch.int64)
    else:
        picked = [(rank * 3 + k * (rank + 2)) % rows for k in range(4 + rank)]
        if duplicates:
            picked = picked + picked[:2]
        index = torch.tensor([picked], dtype=torch.int64)
    count = index.shape[1]
    if hybrid:
        values = (torch.arange(count * 3, dtype=torch.int64).view(count, 3) + rank).to(dtype)
        return torch.sparse_coo_tensor(index, values, (rows, 3))
    return torch.sparse_coo_tensor(index, (torch.arange(count, dtype=torch.int64) + rank + 1).to(dtype), (rows,))


def reduce_on(group, rank, ranks, dtype, hybrid, duplicates, op=None):
    tensor = sparse_input(rank, ranks, dtype, hybrid, duplicates)
    dist.all_reduce(tensor, op=op or dist.ReduceOp.SUM, group=group)
    return tensor


def test_against_gloo(check, twin, rank, ranks):
    for dtype in [torch.float32, torch.float64, torch.int64]:
        for hybrid in [False, True]:
            for duplicates in [False, True]:
                what = f"sparse all_reduce {dtype} hybrid={hybrid} duplicates={duplicates}"
                ours, gloo = twin.both(lambda group: reduce_on(group, rank, ranks, dtype, hybrid, duplicates))
                check.true(ours[0] == "ok", f"{what}: ours raised {ours[1:]}")
                check.true(gloo[0] == "ok", f"{what}: gloo raised {gloo[1:]}")
                ours, gloo = ours[1], gloo[1]
                dense = sum(sparse_input(r, ranks, dtype, hybrid, duplicates).to_dense() for r in range(ranks))
                check.true(ours.is_sparse, f"{what}: the result is sparse")
                check.equal(ours.to_dense(), dense, f"{what}: against the dense sum")
                check.true(ours.is_coalesced() == gloo.is_coalesced(), f"{what}: coalesced as gloo's")
                check.equal(ours._indices(), gloo._indices(), f"{what}: indices as gloo's")
                check.equal(ours._values(), gloo._values(), f"{what}: values as gloo's")


def test_refusals(check, twin, rank, ranks):
    for op in [dist.ReduceOp.MAX, dist.ReduceOp.PRODUCT]:
        ours, gloo = twin.both(lambda group: reduce_on(group, rank, ranks, torch.float32, False, False, op))
        same_exception_type(check, ours, gloo, f"sparse all_reduce {op}")
    # Sizes that differ between ranks: every rank raises, and the group is still usable.
    tensor = torch.sparse_coo_tensor(torch.tensor([[0]]), torch.ones(1), (4 + rank,))
    try:
        dist.all_reduce(tensor)
        check.fail("sparse all_reduce of tensors of different sizes did not raise")
    except RuntimeError as error:
        check.true("differ" in str(error), f"the mismatch is named: {error}")
    dense = torch.ones(2)
    dist.all_reduce(dense)
    check.equal(dense, torch.full((2,), float(ranks)), "all_reduce after a refused sparse one")


def ddp_embedding_step(group, rank):
    """One DDP step of a sparse embedding: its gradient is all-reduced as a sparse tensor."""
    torch.manual_seed(0)
    model = torch.nn.EmbeddingBag(20, 4, mode="sum", sparse=True)
    ddp = torch.nn.parallel.DistributedDataParallel(model, process_group=group)
    tokens = torch.tensor([[rank, rank + 3, 7], [rank * 2, 9, 1]])
    ddp(tokens).pow(2).sum().backward()
    return model.weight.grad.coalesce().to_dense()


def test_ddp(check, twin, rank, ranks):
    ours, gloo = twin.both(lambda group: ddp_embedding_step(group or dist.group.WORLD, rank))
    check.true(ours[0] == "ok" and gloo[0] == "ok", f"DDP with a sparse embedding: {ours[:1]} {gloo[:1]}")
    check.equal(ours[1], gloo[1], "DDP sparse embedding gradient as gloo's")


def main():
    run_against_gloo("test_sparse", [test_against_gloo, test_refusals, test_ddp])


if __name__ == "__main__":
    main()
