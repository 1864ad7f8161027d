"""DistributedDataParallel on the collective backend trains like one process on the full batch.

    collrun -n 2 /usr/bin/python3 tests/python/test_ddp.py     (and -n 3)

Each rank trains a small model for 5 SGD steps on its slice of a global batch; DDP averages the
gradients over the ranks, which for equal slices is the full batch's gradient. Each rank also
trains a copy of the same model alone on the full batch, and the parameters must agree within
1e-5. The same again with several gradient buckets, and with the fp16 compression hook (whose
half-precision all-reduce Gloo on torch 1.13 cannot do), within what fp16 rounding allows.
"""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel

from common import Checker

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


def train(model, ranks, rank=None):
    """STEPS steps of SGD; on one rank's slice of each batch when `rank` is given, else the whole."""
    optimizer = torch.optim.SGD(model.parameters(), lr=LEARNING_RATE)
    for step in range(STEPS):
        inputs, targets = global_batch(step, ranks)
        if rank is not None:
            inputs = inputs[rank * BATCH_PER_RANK:(rank + 1) * BATCH_PER_RANK]
            targets = targets[rank * BATCH_PER_RANK:(rank + 1) * BATCH_PER_RANK]
        optimizer.zero_grad()
        nn.functional.mse_loss(model(inputs), targets).backward()
        optimizer.step()


def max_difference(a, b):
    return max((pa - pb).abs().max().item() for pa, pb in zip(a.parameters(), b.parameters()))


def main():
    dist.init_process_group("collective")
    rank, ranks = dist.get_rank(), dist.get_world_size()
    check = Checker()

    reference = make_model()
    train(reference, ranks)

    variants = [("one bucket", {}, None, 1e-5),
                ("several buckets", {"bucket_cap_mb": 0.001}, None, 1e-5),
                ("fp16 compression hook", {}, default_hooks.fp16_compress_hook, 1e-4)]
    for name, options, hook, tolerance in variants:
        model = make_model()
        # DDP broadcasts rank 0's parameters at construction: perturb the others to see it happen.
        if rank != 0:
            with torch.no_grad():
                for parameter in model.parameters():
                    parameter.add_(1.0)
        ddp = DistributedDataParallel(model, **options)
        if hook is not None:
            ddp.register_comm_hook(dist.group.WORLD, hook)
        train(ddp, ranks, rank)
        difference = max_difference(model, reference)
        check.true(difference <= tolerance,
                   f"DDP ({name}) differs from full-batch training by {difference:.3g} > {tolerance}")
        print(f"rank {rank}: DDP ({name}): max parameter difference {difference:.3g}", flush=True)
        # Every rank holds the same parameters.
        flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
        gathered = [torch.empty_like(flat) for _ in range(ranks)]
        dist.all_gather(gathered, flat)
        for r in range(ranks):
            check.equal(gathered[r], flat, f"DDP ({name}) parameters of rank {r}")
        del ddp
    dist.destroy_process_group()
    check.summary(f"test_ddp ({ranks} ranks)")


if __name__ == "__main__":
    main()
