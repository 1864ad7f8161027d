"""Sharded checkpoints of the ZeRO engine.

    collrun -n 3 /usr/bin/python3 tests/python/test_zero_checkpoint.py     (and -n 2)

For each stage (and SGD, and bf16): train k steps, save (with a client_state), train on; a fresh
engine (initialised differently) loads the checkpoint and trains the same steps: its parameters
must equal the uninterrupted run's bit for bit, and client_state must come back. The checkpoint
consolidated in one process must equal the parameters at the time of saving, bit for bit. Then a
group of one rank fewer loads the same checkpoint (resharding): its parameters and optimizer state,
saved again and consolidated, equal the original's bit for bit, and it trains on. Engines of the
other stages load a stage-1 checkpoint to the same parameters.
"""
import os
import shutil
import tempfile

import torch
import torch.distributed as dist

from common import Checker
from torch_collective import zero
from torch_collective.zero import checkpoint as zero_checkpoint
from zero_common import config, init, new_engine, train_engine

SAVED_AT = 2
MORE = 2


def shared_directory(rank):
    path = [tempfile.mkdtemp(prefix="zero_ckpt_") if rank == 0 else None]
    dist.broadcast_object_list(path, src=0)
    return path[0]


def consolidated_state(path, name):
    """One optimizer-state tensor (or the master parameters) of a checkpoint, unsharded."""
    meta = zero_checkpoint._read_meta(path)
    flat = torch.empty(meta["total"], dtype=torch.float32)
    zero_checkpoint._ShardReader(path, meta).read(name, 0, meta["total"], flat)
    return flat


def equal_states(a, b):
    return all(torch.equal(a[name], b[name]) for name in a) and a.keys() == b.keys()


def check_resume(check, ranks, rank, directory, stage, optimizer="Adam", bf16=False, **zero_options):
    what = f"stage {stage} {optimizer} bf16 {bf16} {zero_options}"
    cfg = config(stage, optimizer, accumulation=2, **zero_options)
    if bf16:
        cfg["bf16"] = {"enabled": True}
    save_dir = os.path.join(directory, f"stage{stage}_{optimizer}_{bf16}_{len(zero_options)}")
    client_state = {"epoch": 3, "note": "resume here", "tensor": torch.arange(5)}

    uninterrupted = new_engine(cfg)
    train_engine(uninterrupted, 0, SAVED_AT, 2)
    path = uninterrupted.save_checkpoint(save_dir, client_state=client_state)
    at_save = uninterrupted.full_parameters()
    train_engine(uninterrupted, SAVED_AT, MORE, 2)
    expected = uninterrupted.full_parameters()

    resumed = new_engine(cfg, seed=99)
    loaded_path, loaded_state = resumed.load_checkpoint(save_dir)
    check.true(loaded_path == path, f"{what}: load_checkpoint returned {loaded_path}, expected {path}")
    check.true(loaded_state.keys() == client_state.keys() and loaded_state["epoch"] == 3
               and loaded_state["note"] == "resume here" and torch.equal(loaded_state["tensor"], torch.arange(5)),
               f"{what}: client_state came back as {loaded_state}")
    check.true(resumed.global_steps == SAVED_AT, f"{what}: global_steps {resumed.global_steps} after loading")
    check.true(equal_states(resumed.full_parameters(), at_save), f"{what}: the loaded parameters differ from the saved")
    train_engine(resumed, SAVED_AT, MORE, 2)
    check.true(equal_states(resumed.full_parameters(), expected),
               f"{what}: training on after loading differs from the run that never stopped")

    if not bf16:
        full = zero.consolidate_checkpoint(save_dir)
        check.true(list(full) == [n for n, _ in uninterrupted.module.named_parameters()],
                   f"{what}: consolidated names {list(full)}")
        check.true(equal_states(full, at_save), f"{what}: the consolidated checkpoint differs from the parameters")
    return save_dir


def check_reshard(check, ranks, rank, directory, save_dir, stage):
    """A group of ranks-1 ranks loads a checkpoint saved by `ranks`."""
    smaller = dist.new_group(list(range(ranks - 1)))
    if rank < ranks - 1:
        what = f"stage {stage}: {ranks} ranks into {ranks - 1}"
        cfg = config(stage, "Adam", accumulation=2)
        engine = new_engine(cfg, group=smaller, seed=5)
        engine.load_checkpoint(save_dir)
        resaved = engine.save_checkpoint(os.path.join(directory, f"resharded{stage}"))
        original = os.path.join(save_dir, open(os.path.join(save_dir, "latest")).read())
        for name in ("master", "state0", "state1"):
            same = torch.equal(consolidated_state(resaved, name), consolidated_state(original, name))
            check.true(same, f"{what}: '{name}' after resharding differs from the checkpoint's")
        before = engine.full_parameters()
        train_engine(engine, SAVED_AT, 1, 2)
        check.true(not equal_states(engine.full_parameters(), before), f"{what}: training after loading did nothing")
    dist.barrier()


def check_other_stage(check, save_dir, saved_stage):
    """A checkpoint is independent of the stage: another stage's engine loads the same values."""
    offload_param = {"offload_param": {"device": "cpu"}}
    for stage, options in [(s, {}) for s in range(4) if s != saved_stage] + [(3, offload_param)]:
        engine = new_engine(config(stage, "Adam", accumulation=2, **options), seed=11)
        engine.load_checkpoint(save_dir)
        expected = zero.consolidate_checkpoint(save_dir)
        check.true(equal_states(engine.full_parameters(), expected),
                   f"a stage {saved_stage} checkpoint loaded into stage {stage} {options} gives other parameters")


def main():
    ranks, rank = init()
    check = Checker()
    directory = shared_directory(rank)
    try:
        for stage in range(4):
            save_dir = check_resume(check, ranks, rank, directory, stage)
            check_reshard(check, ranks, rank, directory, save_dir, stage)
            if stage == 1:
                check_other_stage(check, save_dir, stage)
        check_resume(check, ranks, rank, directory, 2, optimizer="SGD")
        check_resume(check, ranks, rank, directory, 3, bf16=True)
        for bf16 in (False, True):
            check_resume(check, ranks, rank, directory, 3, bf16=bf16, offload_param={"device": "cpu"})
        check.summary("test_zero_checkpoint")
    finally:
        dist.barrier()
        if rank == 0:
            shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
