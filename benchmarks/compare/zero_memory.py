#!/usr/bin/env python3
"""Per-rank model-state memory and communication of each ZeRO stage, measured, against the ZeRO
paper's formulas.

    PYTHONPATH=build/python collrun -n 4 /usr/bin/python3 benchmarks/compare/zero_memory.py

For stages 0-3, in float32 and in bf16 (mixed precision with float32 master weights), builds the
engine on an MLP of Ψ parameters, trains a few steps and reports memory_breakdown() beside the
paper's per-rank formulas for N ranks: params + grads + optimizer states =
  stage 0: 2Ψ + 2Ψ + KΨ,  stage 1: 2Ψ + 2Ψ + KΨ/N,  stage 2: 2Ψ + (2 + K)Ψ/N,  stage 3: (4 + K)Ψ/N
with 2 bytes per parameter and gradient and K = 12 (Adam's two moments and the float32 master) for
bf16; float32 training has 4 bytes per parameter and gradient and K = 8 (no master copy). It also
counts the elements this rank hands to the ZeRO engine's collectives per step (all-reduce,
reduce-scatter, all-gather), to compare with the paper's 2Ψ (stages 0-2) and 3Ψ (stage 3).
Prints a Markdown table.
"""
import argparse

import torch
import torch.distributed as dist
import torch.nn.functional as F

from torch_collective import _C, zero
from zero_step_bench import make_model  # the same MLP as the step-time benchmark


class ElementCounter:
    """Counts the elements passed to the engine's collectives, by wrapping them where the engine
    calls them."""

    def __init__(self):
        self.counts = {"all-reduce": 0, "reduce-scatter": 0, "all-gather": 0}
        wrap = [("zero_reduce_scatter_range", "reduce-scatter", "bucket"),
                ("zero_reduce_scatter_gradients", "reduce-scatter", "grads"),
                ("zero_all_gather_range", "all-gather", "out"),
                ("zero_all_gather_parameters", "all-gather", "params")]
        for function, kind, argument in wrap:
            self._wrap_c(function, kind, argument)
        original = dist.all_reduce

        def all_reduce(tensor, *args, **kwargs):
            if tensor.numel() > 2:  # not the norm's two numbers
                self.counts["all-reduce"] += tensor.numel()
            return original(tensor, *args, **kwargs)
        dist.all_reduce = all_reduce

    def _wrap_c(self, function, kind, argument):
        original = getattr(_C, function)
        position = {"bucket": 1, "grads": 1, "out": 3, "params": 2}[argument]

        def counted(*args, **kwargs):
            self.counts[kind] += args[position].numel()
            return original(*args, **kwargs)
        setattr(_C, function, counted)

    def reset(self):
        for key in self.counts:
            self.counts[key] = 0


def formula(stage, psi, ranks, bf16):
    low, k = (2, 12) if bf16 else (4, 8)
    params = low * psi / ranks if stage >= 3 else low * psi
    grads = low * psi / ranks if stage >= 2 else low * psi
    states = k * psi / ranks if stage >= 1 else k * psi
    return {"params": params, "grads": grads, "optimizer_states": states}


def mib(value):
    return f"{value / 2**20:.2f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()
    dist.init_process_group("collective")
    ranks, rank = dist.get_world_size(), dist.get_rank()
    counter = ElementCounter()
    rows = []
    for bf16 in (False, True):
        for stage in range(4):
            model = make_model(args.width, args.depth)
            cfg = {"train_micro_batch_size_per_gpu": 4, "bf16": {"enabled": bf16},
                   "optimizer": {"type": "Adam", "params": {"lr": 1e-3}},
                   "zero_optimization": {"stage": stage, "stage3_param_persistence_threshold": 0,
                                         "reduce_bucket_size": 1 << 20, "allgather_bucket_size": 1 << 20}}
            engine, _, _, _ = zero.initialize(model=model, config=cfg)
            psi = engine.layout.total
            for step in range(args.steps):
                if step == args.steps - 1:
                    counter.reset()
                x = torch.randn(4, args.width)
                loss = F.cross_entropy(engine(x), torch.randint(0, 10, (4,)))
                engine.backward(loss)
                engine.step()
            measured = engine.memory_breakdown()
            expected = formula(stage, psi, ranks, bf16)
            moved = dict(counter.counts)
            rows.append((stage, "bf16" if bf16 else "fp32", psi, expected, measured, moved))
            del engine
    if rank == 0:
        print(f"# {ranks} ranks, MLP {args.depth}x{args.width}: Ψ = {rows[0][2]:,} parameters; MiB per rank, "
              "formula / measured; elements per step through each collective, in units of Ψ")
        print("| stage | dtype | params | grads | optimizer states | total | ratio | all-reduce | reduce-scatter | "
              "all-gather |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for stage, dtype, psi, expected, measured, moved in rows:
            cells = [f"{mib(expected[k])} / {mib(measured[k])}" for k in ("params", "grads", "optimizer_states")]
            total_expected, total_measured = sum(expected.values()), sum(measured.values())
            traffic = [f"{moved[k] / psi:.2f}" for k in ("all-reduce", "reduce-scatter", "all-gather")]
            print(f"| {stage} | {dtype} | " + " | ".join(cells) +
                  f" | {mib(total_expected)} / {mib(total_measured)} | {total_measured / total_expected:.3f} | " +
                  " | ".join(traffic) + " |")


if __name__ == "__main__":
    main()
