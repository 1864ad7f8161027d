"""DDP training that goes on after losing a rank, torchft-style (docs/pytorch.md, "Surviving a
lost rank"):

    collrun -n 4 --keep-going PYTHON examples/elastic_ddp.py --lose 2 --at 4

Every rank keeps the state it had at the start of the last two steps (DDP replicates it, so any
survivor holds all of it). Rank --lose kills itself at step --at. The survivors' step fails with a
RuntimeError; each one shrinks the group (torch_collective.shrink_group: the survivors agree on who
is gone), agrees with the others on the step to go back to (the earliest step a survivor was in:
a rank may be one step ahead of another), restores that step's state, wraps the model in DDP
again over the new group and goes on. collrun's --keep-going lets the survivors run on.
"""
import argparse
import copy
import os
import signal
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

import torch_collective

GLOBAL_BATCH = 24


def batch(step, rank, ranks):
    """This rank's share of the global batch of `step` (the same data whatever the number of ranks)."""
    generator = torch.Generator().manual_seed(step)
    inputs = torch.randn(GLOBAL_BATCH, 8, generator=generator)
    targets = inputs.sum(dim=1, keepdim=True)
    share = GLOBAL_BATCH // ranks
    return inputs[rank * share:(rank + 1) * share], targets[rank * share:(rank + 1) * share]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--lose", type=int, default=2, help="the rank that dies")
    parser.add_argument("--at", type=int, default=4, help="the step it dies at")
    args = parser.parse_args()

    dist.init_process_group("collective", timeout=timedelta(seconds=20))
    me = dist.get_rank()  # this process's rank when the job started
    torch.manual_seed(0)
    module = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))
    optimizer = torch.optim.SGD(module.parameters(), lr=0.02)
    model = DistributedDataParallel(module)
    snapshots = {}  # step -> the state at its start
    step = 0
    while step < args.steps:
        snapshots[step] = copy.deepcopy((module.state_dict(), optimizer.state_dict()))
        snapshots.pop(step - 2, None)
        if me == args.lose and step == args.at:
            os.kill(os.getpid(), signal.SIGKILL)
        try:
            inputs, targets = batch(step, dist.get_rank(), dist.get_world_size())
            optimizer.zero_grad()
            loss = F.mse_loss(model(inputs), targets)
            loss.backward()
            optimizer.step()
            step += 1
        except RuntimeError as error:
            print(f"rank {me}: step {step} failed: {str(error).splitlines()[0][:120]}", flush=True)
            torch_collective.shrink_group()
            back_to = torch.tensor([step])
            dist.all_reduce(back_to, op=dist.ReduceOp.MIN)
            step = int(back_to.item())
            module_state, optimizer_state = snapshots[step]
            module.load_state_dict(module_state)
            optimizer.load_state_dict(optimizer_state)
            model = DistributedDataParallel(module)
            print(f"rank {me}: going on from step {step} as rank {dist.get_rank()} of {dist.get_world_size()}",
                  flush=True)
    print(f"rank {me}: done, {args.steps} steps, the last with {dist.get_world_size()} ranks, loss "
          f"{loss.item():.5f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
