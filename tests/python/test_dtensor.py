"""DTensor and DeviceMesh on the collective backend.

    collrun -n 2 /usr/bin/python3 tests/python/test_dtensor.py     (and -n 3)

On a 1-D cpu mesh over all ranks: distribute_tensor scatters/broadcasts rank 0's tensor (the
others pass different data, which must be ignored) as Shard(0), Shard(1) and Replicate(); every
redistribute between Shard(0), Shard(1), Replicate() and Partial() (sum, avg, max) gives the
expected local pieces (all_gather, all_to_all, all_reduce, reduce_scatter underneath); matmuls of
sharded DTensors equal torch.mm; and a 2-layer MLP parallelised with ColwiseParallel/RowwiseParallel
trains (SGD, then Adam) to the same weights as one process (within 1e-5). On a 2-D ("dp", "tp")
mesh of shape (2, world/2) when the number of ranks is even: 2-D placements, their redistribution,
and the MLP with tensor parallelism over "tp" and FSDP2 over "dp" trained on each dp rank's slice of
the batch. Odd worlds skip the 2-D part and say so.
"""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

from common import rank_input, start_process_group

TOLERANCE = 1e-5
STEPS = 4
BATCH = 6  # per data-parallel rank


def chunk(full, dim, index, parts):
    """Part `index` of `full` cut into `parts` along `dim` as DTensor's Shard does (torch.chunk)."""
    pieces = full.chunk(parts, dim=dim)
    if index < len(pieces):
        return pieces[index]
    return full.narrow(dim, 0, 0)


def seeded(seed, *shape):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def check_close(check, actual, expected, what, tolerance=TOLERANCE):
    check.true(actual.shape == expected.shape, f"{what}: shape {tuple(actual.shape)} != {tuple(expected.shape)}")
    difference = (actual - expected).abs().max().item() if expected.numel() else 0.0
    check.true(difference <= tolerance, f"{what}: differs by {difference:.3g} > {tolerance}")
    return difference


def check_placements(check, mesh, rank, ranks):
    full = seeded(7, 7, 5)  # 7 rows: uneven over 2 and 3 ranks
    # Only rank 0's data counts (src_data_rank=0): the others pass something else.
    source = full if rank == 0 else full + 100
    for placement, expected in [(Shard(0), chunk(full, 0, rank, ranks)), (Shard(1), chunk(full, 1, rank, ranks)),
                                (Replicate(), full)]:
        tensor = distribute_tensor(source, mesh, [placement])
        check.equal(tensor.to_local(), expected, f"distribute_tensor {placement}: local part")
        check.equal(tensor.full_tensor(), full, f"distribute_tensor {placement}: full_tensor")

    # Every redistribution between the shard and replicate placements.
    placements = [Shard(0), Shard(1), Replicate()]
    expected_local = {str(Shard(0)): chunk(full, 0, rank, ranks), str(Shard(1)): chunk(full, 1, rank, ranks),
                      str(Replicate()): full}
    for begin in placements:
        for end in placements:
            tensor = distribute_tensor(source, mesh, [begin]).redistribute(mesh, [end])
            check.true(tensor.placements == (end,), f"redistribute {begin} -> {end}: placements {tensor.placements}")
            check.equal(tensor.to_local(), expected_local[str(end)], f"redistribute {begin} -> {end}: local part")

    # Partial: each rank's local tensor is a term; reducing gives what every rank can compute.
    terms = [rank_input(r, 35, torch.float32).reshape(7, 5) for r in range(ranks)]
    stacked = torch.stack(terms)
    for reduce_op, reduced in [("sum", stacked.sum(0)), ("avg", stacked.mean(0)), ("max", stacked.max(0).values)]:
        for end, expected in [(Replicate(), reduced), (Shard(0), chunk(reduced, 0, rank, ranks)),
                              (Shard(1), chunk(reduced, 1, rank, ranks))]:
            partial = DTensor.from_local(terms[rank], mesh, [Partial(reduce_op)])
            tensor = partial.redistribute(mesh, [end])
            check.equal(tensor.to_local(), expected, f"redistribute Partial({reduce_op}) -> {end}: local part")
        check.equal(DTensor.from_local(terms[rank], mesh, [Partial(reduce_op)]).full_tensor(), reduced,
                    f"Partial({reduce_op}).full_tensor()")


def check_matmul(check, mesh, rank, ranks):
    a, b = seeded(11, 7, 9), seeded(12, 9, 5)
    expected = torch.mm(a, b)
    cases = [(Shard(0), Replicate(), Shard(0)),   # rows of A: no communication
             (Replicate(), Shard(1), Shard(1)),   # columns of B
             (Shard(1), Shard(0), Partial()),     # the inner dimension: partial sums, all-reduced
             (Replicate(), Replicate(), Replicate())]
    for placement_a, placement_b, placement_out in cases:
        da = distribute_tensor(a, mesh, [placement_a])
        db = distribute_tensor(b, mesh, [placement_b])
        product = torch.mm(da, db)
        what = f"mm({placement_a}, {placement_b})"
        check.true(product.placements == (placement_out,), f"{what}: placements {product.placements}")
        check_close(check, product.full_tensor(), expected, f"{what}.full_tensor()")
        if isinstance(placement_out, Shard):
            check_close(check, product.to_local(), chunk(expected, placement_out.dim, rank, ranks),
                        f"{what} local part")
    # A sharded elementwise op and a reduction to a Partial scalar.
    da = distribute_tensor(a, mesh, [Shard(0)])
    check_close(check, (da * 2 + 1).tanh().full_tensor(), (a * 2 + 1).tanh(), "elementwise on Shard(0)")
    check_close(check, da.sum().full_tensor(), a.sum(), "sum() of Shard(0)")


def make_mlp():
    torch.manual_seed(4321)
    return nn.Sequential(nn.Linear(8, 24), nn.Tanh(), nn.Linear(24, 4))


def make_optimizer(name, parameters):
    if name == "sgd":
        return torch.optim.SGD(parameters, lr=0.1, momentum=0.9)
    return torch.optim.Adam(parameters, lr=0.01)


def batch(step, size):
    generator = torch.Generator().manual_seed(500 + step)
    return torch.randn(size, 8, generator=generator), torch.randn(size, 4, generator=generator)


def train(model, optimizer, size, start=0, count=None):
    """STEPS steps on rows start..start+count of each batch of `size` rows (all of them by default)."""
    count = size if count is None else count
    for step in range(STEPS):
        inputs, targets = batch(step, size)
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(inputs[start:start + count]), targets[start:start + count])
        loss.backward()
        optimizer.step()


def max_difference(model, reference):
    return max((p.full_tensor() - r.detach()).abs().max().item()
               for p, r in zip(model.parameters(), reference.parameters()))


TP_PLAN = {"0": ColwiseParallel(), "2": RowwiseParallel()}


def check_tensor_parallel(check, mesh, rank, ranks):
    for optimizer_name in ("sgd", "adam"):
        reference = make_mlp()
        train(reference, make_optimizer(optimizer_name, reference.parameters()), BATCH)
        model = parallelize_module(make_mlp(), mesh, TP_PLAN)
        expected_placements = {"0.weight": Shard(0), "0.bias": Shard(0), "2.weight": Shard(1), "2.bias": Replicate()}
        for name, parameter in model.named_parameters():
            check.true(isinstance(parameter, DTensor) and parameter.placements == (expected_placements[name],),
                       f"tensor parallel: {name} placements {getattr(parameter, 'placements', None)}")
        train(model, make_optimizer(optimizer_name, model.parameters()), BATCH)
        difference = max_difference(model, reference)
        check.true(difference <= TOLERANCE,
                   f"tensor parallel ({optimizer_name}) differs from one process by {difference:.3g} > {TOLERANCE}")
        # Each rank's own shard of the first layer's weight is its rows of the reference.
        check_close(check, model[0].weight.to_local(), chunk(reference[0].weight.detach(), 0, rank, ranks),
                    f"tensor parallel ({optimizer_name}): local rows of 0.weight")
        print(f"rank {rank}: tensor parallel, 1-D mesh ({optimizer_name}): max parameter difference "
              f"{difference:.3g}", flush=True)


def check_2d(check, rank, ranks):
    shape = (2, ranks // 2)
    mesh = init_device_mesh("cpu", shape, mesh_dim_names=("dp", "tp"))
    dp, tp = list(mesh.get_coordinate())
    check.true(mesh["dp"].size() == shape[0] and mesh["tp"].size() == shape[1], f"2-D mesh sizes {mesh.shape}")
    check.true(dp == rank // shape[1] and tp == rank % shape[1], f"2-D mesh coordinate ({dp}, {tp}) of rank {rank}")

    # Sub-mesh groups: an all_reduce over "dp" adds the ranks of this rank's column only.
    value = torch.tensor([float(rank + 1)])
    dist.all_reduce(value, group=mesh["dp"].get_group())
    check.equal(value, torch.tensor([float(sum(r + 1 for r in range(ranks) if r % shape[1] == tp))]),
                "all_reduce over the dp sub-mesh")

    full = seeded(21, 7, 5)
    source = full if rank == 0 else full - 50
    expected = {"S0S1": chunk(chunk(full, 0, dp, shape[0]), 1, tp, shape[1]),
                "S0R": chunk(full, 0, dp, shape[0]), "RS1": chunk(full, 1, tp, shape[1]), "RR": full,
                "S1S0": chunk(chunk(full, 1, dp, shape[0]), 0, tp, shape[1])}
    placements = {"S0S1": [Shard(0), Shard(1)], "S0R": [Shard(0), Replicate()], "RS1": [Replicate(), Shard(1)],
                  "RR": [Replicate(), Replicate()], "S1S0": [Shard(1), Shard(0)]}
    for begin in placements:
        tensor = distribute_tensor(source, mesh, placements[begin])
        check.equal(tensor.to_local(), expected[begin], f"2-D distribute_tensor {begin}: local part")
        for end in placements:
            moved = tensor.redistribute(mesh, placements[end])
            check.equal(moved.to_local(), expected[end], f"2-D redistribute {begin} -> {end}: local part")
        check.equal(tensor.full_tensor(), full, f"2-D {begin}: full_tensor")
    term = rank_input(rank, 35, torch.float32).reshape(7, 5)
    column_sum = sum(rank_input(r, 35, torch.float32).reshape(7, 5) for r in range(ranks) if r % shape[1] == tp)
    partial = DTensor.from_local(term, mesh, [Partial(), Shard(1)])
    check.equal(partial.redistribute(mesh, [Replicate(), Shard(1)]).to_local(), column_sum,
                "2-D redistribute [Partial, Shard(1)] -> [Replicate, Shard(1)]: local part")

    # Tensor parallelism over "tp", FSDP2 over "dp"; each dp rank trains on its rows of the batch.
    for optimizer_name in ("sgd", "adam"):
        reference = make_mlp()
        train(reference, make_optimizer(optimizer_name, reference.parameters()), BATCH * shape[0])
        model = parallelize_module(make_mlp(), mesh["tp"], TP_PLAN)
        fully_shard(model, mesh=mesh["dp"])
        train(model, make_optimizer(optimizer_name, model.parameters()), BATCH * shape[0], dp * BATCH, BATCH)
        for name, parameter in model.named_parameters():
            check.true(parameter.device_mesh.ndim == 2, f"2-D: {name} mesh {parameter.device_mesh}")
        difference = max_difference(model, reference)
        check.true(difference <= TOLERANCE,
                   f"2-D FSDP2 x TP ({optimizer_name}) differs from one process by {difference:.3g} > {TOLERANCE}")
        print(f"rank {rank}: 2-D mesh {shape} FSDP2 x tensor parallel ({optimizer_name}): max parameter difference "
              f"{difference:.3g}", flush=True)


def main():
    rank, ranks, check = start_process_group()

    mesh = init_device_mesh("cpu", (ranks,))
    check.true(mesh.size() == ranks and list(mesh.get_coordinate()) == [rank],
               f"1-D mesh {mesh} coordinate {mesh.get_coordinate()}")
    check_placements(check, mesh, rank, ranks)
    check_matmul(check, mesh, rank, ranks)
    check_tensor_parallel(check, mesh, rank, ranks)
    if ranks % 2 == 0:
        check_2d(check, rank, ranks)
    else:
        print(f"rank {rank}: 2-D mesh skipped: its shape is (2, world/2) and {ranks} ranks is odd", flush=True)

    dist.destroy_process_group()
    check.summary(f"test_dtensor ({ranks} ranks)")


if __name__ == "__main__":
    main()
