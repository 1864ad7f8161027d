"""torch.distributed.checkpoint of an FSDP2 model and its optimizer on the collective backend.

    collrun -n 2 /usr/bin/python3 tests/python/test_checkpoint.py     (and -n 3)

An MLP sharded with fully_shard trains SAVED_AT Adam steps on each rank's slice of a global batch;
its sharded state (get_state_dict) is saved with dcp.save into a directory all ranks share (rank 0
makes it and broadcasts its path), then the run goes on MORE steps. A fresh model, initialised
differently, with a fresh optimizer, loads the checkpoint (dcp.load, set_state_dict): its full
parameters and optimizer state must equal those at saving bit for bit, and training on must give
the uninterrupted run's parameters bit for bit; both equal one process trained on the full batch
within 1e-5. The full (gathered) state dict equals the sharded one, and one process reading the
checkpoint alone (no_dist) into a plain model gets the saved parameters.
"""
import shutil
import tempfile
import warnings

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.nn as nn
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_state_dict, set_state_dict
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor import DTensor

from common import start_process_group

SAVED_AT = 3
MORE = 3
BATCH_PER_RANK = 4
TOLERANCE = 1e-5


def make_model(seed=1234):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(10, 17), nn.Tanh(), nn.Linear(17, 13), nn.Tanh(), nn.Linear(13, 3))


def make_optimizer(model):
    return torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=0.01)


def sharded_model(mesh, seed=1234):
    model = make_model(seed)
    for index in (0, 2, 4):
        fully_shard(model[index], mesh=mesh)
    fully_shard(model, mesh=mesh)
    return model


def train(model, optimizer, steps, ranks, rank=None):
    """Steps `steps` of each global batch; on rank `rank`'s slice when given, else the whole batch."""
    for step in steps:
        generator = torch.Generator().manual_seed(100 + step)
        inputs = torch.randn(BATCH_PER_RANK * ranks, 10, generator=generator)
        targets = torch.randn(BATCH_PER_RANK * ranks, 3, generator=generator)
        if rank is not None:
            inputs = inputs[rank * BATCH_PER_RANK:(rank + 1) * BATCH_PER_RANK]
            targets = targets[rank * BATCH_PER_RANK:(rank + 1) * BATCH_PER_RANK]
        optimizer.zero_grad()
        nn.functional.mse_loss(model(inputs), targets).backward()
        optimizer.step()


def full(value):
    return value.full_tensor() if isinstance(value, DTensor) else value


def full_parameters(model):
    return {name: full(p).detach().clone() for name, p in model.named_parameters()}


def full_optimizer_state(model, optimizer):
    """{parameter name: {state name: full tensor}}."""
    names = {p: name for name, p in model.named_parameters()}
    return {names[p]: {key: full(value).detach().clone() for key, value in state.items()}
            for p, state in optimizer.state.items()}


def check_same(check, actual, expected, what, exact=True):
    """Dicts of tensors (nested one level at most) equal: bit for bit, or within TOLERANCE."""
    check.true(sorted(actual) == sorted(expected), f"{what}: keys {sorted(actual)} != {sorted(expected)}")
    difference = 0.0
    for key in expected:
        if isinstance(expected[key], dict):
            difference = max(difference, check_same(check, actual[key], expected[key], f"{what}[{key}]", exact))
            continue
        a, e = full(actual[key]), expected[key]
        check.true(a.shape == e.shape and a.dtype == e.dtype,
                   f"{what}[{key}]: {a.dtype}{tuple(a.shape)} != {e.dtype}{tuple(e.shape)}")
        d = (a.double() - e.double()).abs().max().item() if e.numel() else 0.0
        difference = max(difference, d)
        if exact:
            check.true(torch.equal(a, e), f"{what}[{key}]: not bit-for-bit equal (max difference {d:.3g})")
        else:
            check.true(d <= TOLERANCE, f"{what}[{key}]: differs by {d:.3g} > {TOLERANCE}")
    return difference


def main():
    rank, ranks, check = start_process_group()
    mesh = init_device_mesh("cpu", (ranks,))

    path = [tempfile.mkdtemp(prefix="dcp_fsdp2_") if rank == 0 else None]
    dist.broadcast_object_list(path, src=0)
    path = path[0]

    reference = make_model()
    reference_optimizer = make_optimizer(reference)
    train(reference, reference_optimizer, range(SAVED_AT), ranks)
    reference_at_save = {name: p.detach().clone() for name, p in reference.named_parameters()}
    train(reference, reference_optimizer, range(SAVED_AT, SAVED_AT + MORE), ranks)
    reference_final = {name: p.detach().clone() for name, p in reference.named_parameters()}

    # The uninterrupted run, saved after SAVED_AT steps.
    model = sharded_model(mesh)
    optimizer = make_optimizer(model)
    train(model, optimizer, range(SAVED_AT), ranks, rank)
    saved_parameters = full_parameters(model)
    saved_optimizer = full_optimizer_state(model, optimizer)
    difference = check_same(check, saved_parameters, reference_at_save, "parameters at saving vs one process",
                            exact=False)
    print(f"rank {rank}: FSDP2 at saving vs one process: max parameter difference {difference:.3g}", flush=True)

    model_state, optimizer_state = get_state_dict(model, optimizer)
    check.true(all(isinstance(v, DTensor) for v in model_state.values()), "get_state_dict: model state not sharded")
    dcp.save({"model": model_state, "optimizer": optimizer_state}, checkpoint_id=path)

    # The full state dict (gathered on every rank) is the same state.
    full_model_state, full_optimizer = get_state_dict(model, optimizer, options=StateDictOptions(full_state_dict=True))
    check_same(check, full_model_state, saved_parameters, "full model state dict")
    check_same(check, {name: full_optimizer["state"][name] for name in saved_optimizer}, saved_optimizer,
               "full optimizer state dict")

    train(model, optimizer, range(SAVED_AT, SAVED_AT + MORE), ranks, rank)
    uninterrupted = full_parameters(model)
    del model, optimizer, model_state, optimizer_state

    # A fresh model and optimizer, initialised differently, load the checkpoint.
    resumed = sharded_model(mesh, seed=99)
    resumed_optimizer = make_optimizer(resumed)
    fresh = full_parameters(resumed)
    check.true(any(not torch.equal(fresh[name], saved_parameters[name]) for name in fresh),
               "the fresh model already has the saved parameters")
    model_state, optimizer_state = get_state_dict(resumed, resumed_optimizer)
    state = {"model": model_state, "optimizer": optimizer_state}
    dcp.load(state, checkpoint_id=path)
    set_state_dict(resumed, resumed_optimizer, model_state_dict=state["model"], optim_state_dict=state["optimizer"])
    check_same(check, full_parameters(resumed), saved_parameters, "parameters after loading")
    check_same(check, full_optimizer_state(resumed, resumed_optimizer), saved_optimizer,
               "optimizer state after loading")
    for name, parameter in resumed.named_parameters():
        check.true(isinstance(parameter, DTensor), f"after loading, {name} is no longer a DTensor")

    train(resumed, resumed_optimizer, range(SAVED_AT, SAVED_AT + MORE), ranks, rank)
    resumed_final = full_parameters(resumed)
    difference = check_same(check, resumed_final, uninterrupted, "resumed training vs uninterrupted")
    print(f"rank {rank}: resumed vs uninterrupted: max parameter difference {difference:.3g}", flush=True)
    difference = check_same(check, resumed_final, reference_final, "resumed training vs one process", exact=False)
    print(f"rank {rank}: resumed vs one process: max parameter difference {difference:.3g}", flush=True)

    # One process reads the whole checkpoint alone into a plain, unsharded model.
    plain = make_model(seed=7)
    plain_state = {"model": plain.state_dict()}
    warnings.filterwarnings("ignore", message="torch.distributed is disabled, unavailable or uninitialized")
    dcp.load(plain_state, checkpoint_id=path, no_dist=True)
    plain.load_state_dict(plain_state["model"])
    check_same(check, {name: p.detach() for name, p in plain.named_parameters()}, saved_parameters,
               "checkpoint read by one process (no_dist)")

    dist.barrier()
    if rank == 0:
        shutil.rmtree(path)
    dist.destroy_process_group()
    check.summary(f"test_checkpoint ({ranks} ranks)")


if __name__ == "__main__":
    main()
