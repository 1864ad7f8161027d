"""DistributedDataParallel on the collective backend trains like one process on the full batch.

    collrun -n 2 /usr/bin/python3 tests/python/test_ddp.py     (and -n 3)

Each rank trains a small model for 5 SGD steps on its slice of a global batch; DDP averages the
gradients over the ranks, which for equal slices is the full batch's gradient. Each rank also
trains a copy of the same model alone on the full batch, and the parameters must agree within
1e-5. The same again with several gradient buckets, and with the fp16 compression hook (whose
half-precision all-reduce Gloo on torch 1.13 cannot do), within what fp16 rounding allows; and
gradient accumulation over micro-batches with no_sync(), which all-reduces only the last.
"""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel

from common import Checker, check_same_on_every_rank

STEPS = 5
BATCH_PER_RANK = 6
LEARNING_RATE = 0.1


def make_model():
    torch.manual_seed(1234)
    return nn.Sequential(nn.Linear(10, 32), nn.Tanh(), nn.Linear(32, 16), nn.Tanh(), nn.Linear(16, 3))


def global_batch(step, ranks):
    generator = torch.Generator().manual_seed(100 + step)
    inputs = torch.randn(BATCH_PER_RANK * ranks, 10, generator=generator)
    targets = torch.randn(BATCH_PER_RANK * ranks, 3, generator=generator)
    return inputs, targets


def train(model, ranks, rank=None, micro_batches=1):
    """STEPS steps of SGD; on one rank's slice of each batch when `rank` is given, else the whole.

    With micro_batches > 1 (DDP only) each slice is split in that many parts whose gradients
    accumulate locally under no_sync() until the last, whose backward all-reduces the sum; each
    part's loss is scaled so that the sum is the slice's mean loss.
    """
    optimizer = torch.optim.SGD(model.parameters(), lr=LEARNING_RATE)
    for step in range(STEPS):
        inputs, targets = global_batch(step, ranks)
        if rank is not None:
            inputs = inputs[rank * BATCH_PER_RANK:(rank + 1) * BATCH_PER_RANK]
            targets = targets[rank * BATCH_PER_RANK:(rank + 1) * BATCH_PER_RANK]
        optimizer.zero_grad()
        parts = list(zip(inputs.chunk(micro_batches), targets.chunk(micro_batches)))
        for index, (part_inputs, part_targets) in enumerate(parts):
            loss = nn.functional.mse_loss(model(part_inputs), part_targets) / micro_batches
            if index < len(parts) - 1:
                with model.no_sync():
                    loss.backward()
            else:
                loss.backward()
        optimizer.step()


def max_difference(a, b):
    return max((pa - pb).abs().max().item() for pa, pb in zip(a.parameters(), b.parameters()))


def main():
    dist.init_process_group("collective")
    rank, ranks = dist.get_rank(), dist.get_world_size()
    check = Checker()

    reference = make_model()
    train(reference, ranks)

    # (name, DDP options, communication hook, micro-batches per step under no_sync, tolerance)
    variants = [("one bucket", {}, None, 1, 1e-5),
                ("several buckets", {"bucket_cap_mb": 0.001}, None, 1, 1e-5),
                ("no_sync accumulation", {"bucket_cap_mb": 0.001}, None, 3, 1e-5),
                ("fp16 compression hook", {}, default_hooks.fp16_compress_hook, 1, 1e-4)]
    for name, options, hook, micro_batches, tolerance in variants:
        model = make_model()
        # DDP broadcasts rank 0's parameters at construction: perturb the others to see it happen.
        if rank != 0:
            with torch.no_grad():
                for parameter in model.parameters():
                    parameter.add_(1.0)
        ddp = DistributedDataParallel(model, **options)
        if hook is not None:
            ddp.register_comm_hook(dist.group.WORLD, hook)
        train(ddp, ranks, rank, micro_batches)
        difference = max_difference(model, reference)
        check.true(difference <= tolerance,
                   f"DDP ({name}) differs from full-batch training by {difference:.3g} > {tolerance}")
        print(f"rank {rank}: DDP ({name}): max parameter difference {difference:.3g}", flush=True)
        # Every rank holds the same parameters.
        check_same_on_every_rank(check, torch.cat([p.detach().reshape(-1) for p in model.parameters()]),
                                 f"DDP ({name}) parameters")
        del ddp
    dist.destroy_process_group()
    check.summary(f"test_ddp ({ranks} ranks)")


if __name__ == "__main__":
    main()
