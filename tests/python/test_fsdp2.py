"""FSDP2 (torch.distributed.fsdp.fully_shard) on the collective backend trains like one process on
the full batch.

    collrun -n 2 /usr/bin/python3 tests/python/test_fsdp2.py     (and -n 3)

A small MLP is sharded per layer and at the root on a 1-D cpu DeviceMesh over all ranks. Each rank
trains it for a few steps on its slice of each global batch (FSDP2 all-gathers the parameters with
all_gather_into_tensor and averages the gradients with reduce_scatter_tensor); each rank also
trains the same model alone on the full batch. The full parameters (DTensor.full_tensor()) must
agree within 1e-5, and so must each rank's own shard (the torch.chunk of the reference along dim 0,
which the odd layer sizes make uneven at 3 ranks). With SGD (momentum) and Adam, with
reshard_after_forward True and False, and with gradient accumulation (set_requires_gradient_sync).
"""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor import DTensor, Shard

from common import check_same_on_every_rank, start_process_group

STEPS = 4
BATCH_PER_RANK = 4
TOLERANCE = 1e-5


def make_model():
    torch.manual_seed(1234)
    return nn.Sequential(nn.Linear(10, 17), nn.Tanh(), nn.Linear(17, 13), nn.Tanh(), nn.Linear(13, 3))


def make_optimizer(name, parameters):
    if name == "sgd":
        return torch.optim.SGD(parameters, lr=0.1, momentum=0.9)
    return torch.optim.Adam(parameters, lr=0.01)


def micro_batch(step, micro, ranks):
    generator = torch.Generator().manual_seed(1000 * step + micro)
    inputs = torch.randn(BATCH_PER_RANK * ranks, 10, generator=generator)
    targets = torch.randn(BATCH_PER_RANK * ranks, 3, generator=generator)
    return inputs, targets


def train(model, optimizer, ranks, accumulation=1, rank=None, fsdp=False):
    """STEPS optimizer steps of `accumulation` micro-batches each; on one rank's slice of each
    micro-batch when `rank` is given, else on the whole. Each micro-batch's loss counts 1/accumulation."""
    for step in range(STEPS):
        optimizer.zero_grad()
        for micro in range(accumulation):
            inputs, targets = micro_batch(step, micro, ranks)
            if rank is not None:
                inputs = inputs[rank * BATCH_PER_RANK:(rank + 1) * BATCH_PER_RANK]
                targets = targets[rank * BATCH_PER_RANK:(rank + 1) * BATCH_PER_RANK]
            if fsdp:  # reduce-scatter the gradients only on the last micro-batch
                model.set_requires_gradient_sync(micro == accumulation - 1)
            loss = nn.functional.mse_loss(model(inputs), targets) / accumulation
            loss.backward()
        optimizer.step()


def own_chunk(full, rank, ranks):
    """Rank `rank`'s part of `full` under FSDP2's sharding (torch.chunk along dim 0, empty past the end)."""
    chunks = full.chunk(ranks, dim=0)
    return chunks[rank] if rank < len(chunks) else full[:0]


def shard_model(model, mesh, reshard_after_forward):
    for index in (0, 2, 4):
        fully_shard(model[index], mesh=mesh, reshard_after_forward=reshard_after_forward)
    fully_shard(model, mesh=mesh, reshard_after_forward=reshard_after_forward)
    return model


def main():
    rank, ranks, check = start_process_group()
    mesh = init_device_mesh("cpu", (ranks,))

    cases = [("sgd", True, 1), ("sgd", False, 1), ("adam", True, 1), ("adam", False, 1),
             ("adam", True, 3), ("sgd", False, 2)]
    references = {}
    for optimizer_name, reshard, accumulation in cases:
        name = f"{optimizer_name}, reshard_after_forward={reshard}, accumulation={accumulation}"
        key = (optimizer_name, accumulation)
        if key not in references:
            reference = make_model()
            train(reference, make_optimizer(optimizer_name, reference.parameters()), ranks, accumulation)
            references[key] = [p.detach().clone() for p in reference.parameters()]
            moved = max((p - q).abs().max().item() for p, q in zip(references[key], make_model().parameters()))
            check.true(moved > 1e-3, f"FSDP2 ({name}): the reference training hardly moved ({moved:.3g})")
        expected = references[key]

        model = shard_model(make_model(), mesh, reshard)
        initial = [p.detach().clone() for p in make_model().parameters()]
        for parameter, full in zip(model.parameters(), initial):
            check.true(isinstance(parameter, DTensor) and parameter.placements == (Shard(0),),
                       f"FSDP2 ({name}): parameter is not a Shard(0) DTensor: {type(parameter)}")
            check.equal(parameter.to_local(), own_chunk(full, rank, ranks),
                        f"FSDP2 ({name}): initial shard of rank {rank}")

        train(model, make_optimizer(optimizer_name, model.parameters()), ranks, accumulation, rank, fsdp=True)

        difference = 0.0
        for index, (parameter, reference) in enumerate(zip(model.parameters(), expected)):
            full = parameter.full_tensor()
            check.true(full.shape == reference.shape, f"FSDP2 ({name}): parameter {index} full shape {full.shape}")
            difference = max(difference, (full - reference).abs().max().item())
            local = own_chunk(reference, rank, ranks)
            check.true(parameter.to_local().shape == local.shape,
                       f"FSDP2 ({name}): parameter {index} shard shape {parameter.to_local().shape} != {local.shape}")
            shard_difference = (parameter.to_local() - local).abs().max().item() if local.numel() else 0.0
            check.true(shard_difference <= TOLERANCE,
                       f"FSDP2 ({name}): rank {rank}'s shard of parameter {index} differs by {shard_difference:.3g}")
        check.true(difference <= TOLERANCE,
                   f"FSDP2 ({name}) differs from full-batch training by {difference:.3g} > {TOLERANCE}")
        print(f"rank {rank}: FSDP2 ({name}): max parameter difference {difference:.3g}", flush=True)

        # The gathered parameters are the same on every rank.
        flat = torch.cat([p.full_tensor().reshape(-1) for p in model.parameters()])
        check_same_on_every_rank(check, flat, f"FSDP2 ({name}) full parameters")
        del model

    dist.destroy_process_group()
    check.summary(f"test_fsdp2 ({ranks} ranks)")


if __name__ == "__main__":
    main()
