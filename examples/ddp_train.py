"""Data-parallel training with DistributedDataParallel on the collective backend.

    PYTHONPATH=build/python collrun -n 2 /usr/bin/python3 examples/ddp_train.py [--steps N]

Each rank trains the same small regression model on its own shard of a synthetic data set; DDP
all-reduces the gradients through libcollective after every backward pass, so the ranks' models
stay identical. Only the backend name differs from a Gloo program.
"""
import argparse

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

import torch_collective  # noqa: F401  (registers the "collective" backend)


def synthetic_data(samples=4096, features=32):
    generator = torch.Generator().manual_seed(0)
    inputs = torch.randn(samples, features, generator=generator)
    true_weights = torch.randn(features, 1, generator=generator)
    targets = inputs @ true_weights + 0.01 * torch.randn(samples, 1, generator=generator)
    return TensorDataset(inputs, targets)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()

    dist.init_process_group("collective")
    rank, size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)  # the same initial model everywhere (DDP also broadcasts rank 0's)
    model = DistributedDataParallel(nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    dataset = synthetic_data()
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=DistributedSampler(dataset))

    step = 0
    while step < args.steps:
        loader.sampler.set_epoch(step)
        for inputs, targets in loader:
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(inputs), targets)
            loss.backward()  # DDP all-reduces the gradients here
            optimizer.step()
            step += 1
            if step % 50 == 0 or step == args.steps:
                average = loss.detach().clone()
                dist.all_reduce(average, op=dist.ReduceOp.AVG)
                if rank == 0:
                    print(f"step {step:4d}: loss {average.item():.5f} (mean over {size} ranks)", flush=True)
            if step == args.steps:
                break

    # The replicas agree: compare a checksum of the parameters across ranks.
    checksum = torch.stack([p.detach().double().sum() for p in model.parameters()]).sum().reshape(1)
    checksums = [torch.empty_like(checksum) for _ in range(size)]
    dist.all_gather(checksums, checksum)
    assert all(torch.equal(c, checksum) for c in checksums), "replicas diverged"
    if rank == 0:
        print(f"done: {size} replicas hold identical parameters")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
