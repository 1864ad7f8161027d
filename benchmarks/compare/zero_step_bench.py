#!/usr/bin/env python3
"""Training-step time of ZeRO stage 2 on libcollective against torch's own ZeroRedundancyOptimizer
over Gloo: same model, same ranks, same data, same run.

    PYTHONPATH=build/python collrun -n 2 /usr/bin/python3 benchmarks/compare/zero_step_bench.py

Three ways to train one model with Adam over the same ranks, timed in alternating order --runs
times:
  collective-zero2  torch_collective.zero, stage 2 (gradients reduce-scattered in buckets during
                    backward, sharded Adam, parameters all-gathered), on a "collective" group;
  gloo-torchzero    DistributedDataParallel + torch.distributed.optim.ZeroRedundancyOptimizer
                    (torch's ZeRO: optimizer state sharded), both over Gloo, the default group;
  collective-torchzero  the same DDP + ZeroRedundancyOptimizer on the "collective" group, which
                    separates what the backend gains from what the engine does.
A run builds each from the same initial weights, takes --warmups untimed steps, then --steps timed
ones (forward, backward, step; the maximum over ranks of the average per step). After each run
the three models must agree (they trained on the same batches), else the script fails. Prints a
table of medians and, last, `ratio gloo-torchzero/collective-zero2: <x>`.
"""
import argparse
import statistics
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.nn.parallel import DistributedDataParallel

import torch_collective  # noqa: F401  (registers the "collective" backend)
from torch_collective import zero

LR = 1e-3


def make_model(width, depth):
    torch.manual_seed(0)
    layers = []
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.Tanh()]
    layers.append(nn.Linear(width, 10))
    return nn.Sequential(*layers)


def batch(step, rank, size, width):
    generator = torch.Generator().manual_seed(step * 1000 + rank)
    return torch.randn(size, width, generator=generator), torch.randint(0, 10, (size,), generator=generator)


class CollectiveZero2:
    name = "collective-zero2"

    def __init__(self, model, group, args):
        cfg = {"train_micro_batch_size_per_gpu": args.batch,
               "optimizer": {"type": "Adam", "params": {"lr": LR, "adam_w_mode": False}},
               "zero_optimization": {"stage": 2, "overlap_comm": True, "reduce_bucket_size": args.bucket,
                                     "allgather_bucket_size": args.bucket}}
        self.engine, _, _, _ = zero.initialize(model=model, config=cfg, group=group)

    def step(self, inputs, labels):
        loss = F.cross_entropy(self.engine(inputs), labels)
        self.engine.backward(loss)
        self.engine.step()

    def parameters(self):
        return self.engine.full_parameters()


class TorchZero:
    def __init__(self, model, group, args, name):
        self.name = name
        self.model = DistributedDataParallel(model, process_group=group, bucket_cap_mb=args.bucket * 4 / 2**20)
        self.optimizer = ZeroRedundancyOptimizer(self.model.parameters(), optimizer_class=torch.optim.Adam,
                                                 process_group=group, lr=LR)

    def step(self, inputs, labels):
        self.optimizer.zero_grad()
        F.cross_entropy(self.model(inputs), labels).backward()
        self.optimizer.step()

    def parameters(self):
        return {n: p.detach().clone() for n, p in self.model.module.named_parameters()}


def timed_run(trainer, args, rank, first_step):
    for step in range(args.warmups):
        trainer.step(*batch(first_step + step, rank, args.batch, args.width))
    dist.barrier()
    start = time.perf_counter()
    for step in range(args.warmups, args.warmups + args.steps):
        trainer.step(*batch(first_step + step, rank, args.batch, args.width))
    seconds = torch.tensor([(time.perf_counter() - start) / args.steps], dtype=torch.float64)
    dist.all_reduce(seconds, op=dist.ReduceOp.MAX)
    return seconds.item()


def check_agreement(results, rank):
    """The three trained the same model on the same batches: nearly every weight must agree. Adam
    turns rounding differences of gradients that are almost zero into whole lr-sized steps (why the
    model uses tanh: ReLU units that die leave whole rows of such gradients), so a few weights may
    differ by about lr; a real fault (a stale shard, a missed reduction) moves a large share."""
    ours = results["collective-zero2"]
    total = sum(t.numel() for t in ours.values())
    for name, other in results.items():
        differing = sum(int(((ours[n] - other[n]).abs() > 1e-4).sum()) for n in ours)
        if differing > total * 1e-3:
            raise SystemExit(f"zero_step_bench: rank {rank}: {differing} of {total} weights of {name} are more than "
                             "1e-4 away from collective-zero2's")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--width", type=int, default=1024, help="hidden width of the MLP (default 1024)")
    parser.add_argument("--depth", type=int, default=4, help="hidden layers (default 4: 4.2M parameters)")
    parser.add_argument("--batch", type=int, default=16, help="samples per rank per step (default 16)")
    parser.add_argument("--bucket", type=int, default=2**20,
                        help="elements per gradient bucket, both engines (default 1Mi = DDP's 4 MiB)")
    parser.add_argument("--runs", type=int, default=5, help="alternating runs (default 5)")
    parser.add_argument("--steps", type=int, default=10, help="timed steps per run (default 10)")
    parser.add_argument("--warmups", type=int, default=2, help="untimed steps per run (default 2)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per rank (default 1)")
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    dist.init_process_group("gloo")
    rank, ranks = dist.get_rank(), dist.get_world_size()
    collective = dist.new_group(backend="collective")
    gloo = dist.distributed_c10d._get_default_group()
    params = sum(p.numel() for p in make_model(args.width, args.depth).parameters())
    if rank == 0:
        print(f"# {ranks} ranks, MLP {args.depth}x{args.width} ({params / 1e6:.2f}M parameters, "
              f"{params * 4 / 2**20:.1f} MiB fp32), batch {args.batch}/rank, Adam, torch {torch.__version__}, "
              f"{args.threads} thread(s)/rank", flush=True)
    builders = [lambda m: CollectiveZero2(m, collective, args),
                lambda m: TorchZero(m, gloo, args, "gloo-torchzero"),
                lambda m: TorchZero(m, collective, args, "collective-torchzero")]
    times = {}
    for run in range(args.runs):
        order = builders if run % 2 == 0 else builders[::-1]
        results = {}
        for build in order:
            trainer = build(make_model(args.width, args.depth))
            times.setdefault(trainer.name, []).append(timed_run(trainer, args, rank, run * 100))
            results[trainer.name] = trainer.parameters()
        check_agreement(results, rank)
        if rank == 0:
            print(f"# run {run + 1}/{args.runs}: " + ", ".join(f"{n} {times[n][-1] * 1e3:.1f} ms" for n in times),
                  flush=True)
    if rank == 0:
        print(f"{'engine':24s} {'median ms/step':>15s} {'min':>8s} {'max':>8s}")
        for name, samples in times.items():
            print(f"{name:24s} {statistics.median(samples) * 1e3:15.2f} {min(samples) * 1e3:8.2f} "
                  f"{max(samples) * 1e3:8.2f}")
        ours = statistics.median(times["collective-zero2"])
        print(f"ratio collective-torchzero/collective-zero2: {statistics.median(times['collective-torchzero']) / ours:.2f}")
        print(f"ratio gloo-torchzero/collective-zero2: {statistics.median(times['gloo-torchzero']) / ours:.2f}")


if __name__ == "__main__":
    main()
