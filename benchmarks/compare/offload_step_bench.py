#!/usr/bin/env python3
"""The host optimizer step of ZeRO-Offload: libcollective's against DeepSpeed's and torch's, same
shard, same process, same run.

    PYTHONPATH=build/python/torch2.15 /opt/collective-py/bin/python benchmarks/compare/offload_step_bench.py \
        [--sizes 1M,16M,64M] [--runs 7] [--iters 3] [--threads 1] [--cases fp32,bf16copy,fp16copy]
        [--from-step 1] [--without-deepspeed]

With offload_optimizer.device cpu, every step of a model on a GPU runs AdamW over the rank's shard
in host memory: float32 master weights, both moments and the gradient that came down, and (mixed
precision) the bf16 or fp16 copy of the updated weights that goes back up. That host step is what
this times, per shard size and case:

  ours          collZeroOptimizerStep through torch_collective's binding (what torch_collective.zero
                runs under offload): one call writes the low-precision copy too;
  ds_cpu_adam   DeepSpeed's DeepSpeedCPUAdam (its ZeRO-Offload optimizer, compiled on first use;
                left out, saying why, where it cannot be built or with --without-deepspeed), then
                copy_ into the low-precision tensor where the case has one;
  torch_adamw   torch.optim.AdamW (foreach=False: one tensor), then the same copy_;
  torch_fused   torch.optim.AdamW(fused=True) where this torch runs it on the CPU, then the copy_.

A second table times the gradient norm of clipping over the same shards: ours
(collZeroSquaredNorm, summed in double) against torch.linalg.vector_norm (in float), both of the
float32 gradient; ours must be within 1e-9 (relative) of the sum in double precision.

Cases: fp32 (float32 gradient, no copy), bf16copy and fp16copy (float32 gradient, the updated
weights also written as bf16 or fp16). --from-step N sets every contender's step count to N after
its first step, so the timed steps are those of a long run (where Adam's second bias correction
has rounded to 1, and ours divides by it no more). --threads sets OMP_NUM_THREADS before anything is imported,
and torch's intra-op threads, and clears COLL_ZERO_THREADS: every contender takes that many (ours
reads OMP_NUM_THREADS too, zero/step_threads.h). Each round times
--iters steps of every implementation in turn, in an order rotated per round; the table gives each
one's median over --runs rounds of its time per step, and the ratio of each peer's median to ours
(above 1: ours faster). Afterwards, ours must match torch_adamw's weights to within two float
roundings of the largest weight per step taken (the same formula, but torch's CPU kernels may fuse
a multiply-add), else the script fails: a fast wrong step is not measured.
"""
import argparse
import os
import statistics
import sys
import time


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1M,16M,64M", help="shard sizes in elements (K and M suffixes)")
    parser.add_argument("--runs", type=int, default=7, help="rounds; the table gives medians over them")
    parser.add_argument("--iters", type=int, default=3, help="steps timed per implementation and round")
    parser.add_argument("--threads", type=int, default=1, help="OMP_NUM_THREADS: the threads of every contender")
    parser.add_argument("--cases", default="fp32,bf16copy,fp16copy")
    parser.add_argument("--from-step", type=int, default=1,
                        help="every contender's step count after its first step: 1 times a run's first steps, "
                             "20000 a long run's, whose bias corrections have rounded to 1")
    parser.add_argument("--without-deepspeed", action="store_true", help="leave DeepSpeedCPUAdam out (ctest's run)")
    return parser.parse_args()


ARGS = parse_args()
os.environ["OMP_NUM_THREADS"] = str(ARGS.threads)  # before torch and DeepSpeed load OpenMP
os.environ.pop("COLL_ZERO_THREADS", None)  # ours takes OMP_NUM_THREADS as the others do

import torch  # noqa: E402

from torch_collective import _C  # noqa: E402

LR, BETAS, EPS, DECAY = 1e-3, (0.9, 0.999), 1e-8, 0.01
COPY_TYPES = {"fp32": None, "bf16copy": torch.bfloat16, "fp16copy": torch.float16}


def elements(text):
    scale = {"K": 1 << 10, "M": 1 << 20}.get(text[-1].upper(), 1)
    return int(text[:-1] if scale > 1 else text) * scale


def deepspeed_cpu_adam():
    """DeepSpeedCPUAdam, or why it is not available here."""
    try:
        import logging
        logging.disable(logging.WARNING)  # DeepSpeed's accelerator banner
        from deepspeed.ops.adam import DeepSpeedCPUAdam
        probe = torch.nn.Parameter(torch.zeros(16))
        probe.grad = torch.zeros(16)
        DeepSpeedCPUAdam([probe], lr=LR).step()
        return DeepSpeedCPUAdam, None
    except Exception as error:  # ImportError, or the op's build failing
        return None, f"{type(error).__name__}: {error}".splitlines()[0]


class Ours:
    def __init__(self, start, grad, copy_type):
        self.master, self.grad = start.clone(), grad
        self.m, self.v = torch.zeros_like(start), torch.zeros_like(start)
        self.copy = torch.empty(start.numel(), dtype=copy_type) if copy_type else None
        self.steps = 0

    def skip_to(self, step):
        self.steps = step

    def step(self):
        self.steps += 1
        _C.zero_optimizer_step("adamw", self.master, self.grad, self.m, self.v, self.copy, lr=LR, beta1=BETAS[0],
                               beta2=BETAS[1], eps=EPS, weight_decay=DECAY, step=self.steps)

    def weights(self):
        return self.master


class TorchOptimizer:
    """A torch.optim-style optimizer over one parameter, then the low-precision copy."""

    def __init__(self, make, start, grad, copy_type):
        self.param = torch.nn.Parameter(start.clone())
        self.param.grad = grad.clone()
        self.optimizer = make([self.param])
        self.copy = torch.empty(start.numel(), dtype=copy_type) if copy_type else None

    def skip_to(self, step):
        for state in self.optimizer.state.values():  # torch keeps a tensor, DeepSpeedCPUAdam an int
            if torch.is_tensor(state["step"]):
                state["step"].fill_(step)
            else:
                state["step"] = step

    def step(self):
        self.optimizer.step()
        if self.copy is not None:
            self.copy.copy_(self.param.detach())

    def weights(self):
        return self.param.detach()


def torch_fused_available():
    try:
        probe = torch.nn.Parameter(torch.zeros(16))
        probe.grad = torch.zeros(16)
        torch.optim.AdamW([probe], lr=LR, fused=True).step()
        return None
    except (RuntimeError, TypeError, ValueError) as error:
        return str(error).splitlines()[0]


def median_times(calls):
    """Each call's median time over --runs rounds of --iters calls, the order rotated per round."""
    names = list(calls)
    times = {name: [] for name in names}
    for run in range(ARGS.runs):
        for name in names[run % len(names):] + names[:run % len(names)]:
            began = time.perf_counter()
            for _ in range(ARGS.iters):
                calls[name]()
            times[name].append((time.perf_counter() - began) / ARGS.iters)
    return {name: statistics.median(samples) for name, samples in times.items()}


def measure(size, case, peers):
    generator = torch.Generator().manual_seed(size)
    start = torch.randn(size, generator=generator)
    grad = torch.randn(size, generator=generator) * 1e-2
    copy_type = COPY_TYPES[case]
    contenders = {"ours": Ours(start, grad, copy_type)}
    for name, make in peers.items():
        contenders[name] = TorchOptimizer(make, start, grad, copy_type)
    for contender in contenders.values():
        contender.step()  # state allocated, pages touched, code loaded
        contender.skip_to(ARGS.from_step)
    medians = median_times({name: contender.step for name, contender in contenders.items()})
    ours, reference = contenders["ours"].weights(), contenders["torch_adamw"].weights()
    difference = ((ours - reference).abs().max() / reference.abs().max()).item()
    if difference > 2 * 2.0 ** -24 * (1 + contenders["ours"].steps - ARGS.from_step):
        sys.exit(f"offload_step_bench: {size} elements, {case}: ours differs from torch's AdamW by {difference:.3g} "
                 "(largest difference over largest weight): the step is wrong, its time means nothing")
    return medians


def measure_norm(size):
    grad = torch.randn(size, generator=torch.Generator().manual_seed(size))
    contenders = {"ours": lambda: _C.zero_squared_norm(grad)[0],
                  "torch_vector_norm": lambda: float(torch.linalg.vector_norm(grad)) ** 2}
    exact = float((grad.double() ** 2).sum())
    if abs(contenders["ours"]() - exact) > 1e-9 * exact:
        sys.exit(f"offload_step_bench: {size} elements: our squared norm {contenders['ours']()} is not {exact}")
    return median_times(contenders)


def main():
    torch.set_num_threads(ARGS.threads)
    peers = {}
    ds_adam, ds_missing = deepspeed_cpu_adam() if not ARGS.without_deepspeed else (None, "--without-deepspeed")
    if ds_adam is not None:
        peers["ds_cpu_adam"] = lambda params: ds_adam(params, lr=LR, betas=BETAS, eps=EPS, weight_decay=DECAY,
                                                      adamw_mode=True)
    peers["torch_adamw"] = lambda params: torch.optim.AdamW(params, lr=LR, betas=BETAS, eps=EPS, weight_decay=DECAY,
                                                            foreach=False)
    fused_missing = torch_fused_available()
    if fused_missing is None:
        peers["torch_fused"] = lambda params: torch.optim.AdamW(params, lr=LR, betas=BETAS, eps=EPS,
                                                                weight_decay=DECAY, fused=True)
    print(f"# torch {torch.__version__}, {ARGS.threads} thread(s), {ARGS.runs} rounds of {ARGS.iters} steps from "
          f"step {ARGS.from_step + 1}; AdamW, float32 master, moments and gradient")
    for name, why in (("ds_cpu_adam", ds_missing), ("torch_fused", fused_missing)):
        if why is not None:
            print(f"# {name} left out: {why}")
    names = ["ours"] + list(peers)
    print("| elements | case | " + " | ".join(f"{name} ms" for name in names) + " | " +
          " | ".join(f"{name}/ours" for name in names[1:]) + " |")
    print("| ---: | --- | " + " | ".join("---:" for _ in names) + " | " + " | ".join("---:" for _ in names[1:]) + " |")
    for size in [elements(s) for s in ARGS.sizes.split(",")]:
        for case in ARGS.cases.split(","):
            if case not in COPY_TYPES:
                sys.exit(f"offload_step_bench: --cases: unknown case {case!r}; expected {', '.join(COPY_TYPES)}")
            medians = measure(size, case, peers)
            cells = " | ".join(f"{medians[name] * 1e3:.2f}" for name in names)
            ratios = " | ".join(f"{medians[name] / medians['ours']:.2f}x" for name in names[1:])
            print(f"| {size:,} | {case} | {cells} | {ratios} |", flush=True)
    print("\n| elements | squared norm: ours ms | torch vector_norm ms | torch/ours |\n| ---: | ---: | ---: | ---: |")
    for size in [elements(s) for s in ARGS.sizes.split(",")]:
        medians = measure_norm(size)
        print(f"| {size:,} | {medians['ours'] * 1e3:.2f} | {medians['torch_vector_norm'] * 1e3:.2f} | "
              f"{medians['torch_vector_norm'] / medians['ours']:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
