"""ZeRO stages 0-3 train exactly like plain torch.optim on the full batch, and hold the memory the
ZeRO paper says.

    collrun -n 2 /usr/bin/python3 tests/python/test_zero_training.py     (and -n 3)

For every stage, with Adam (L2 weight decay), AdamW and SGD with Nesterov momentum, gradient
accumulation, clipping, tiny buckets that cut through parameters, overlap on and off and
reduce_scatter off, each rank trains the engine on its slice of each global batch and checks the
full parameters against the same model trained alone by torch.optim on the whole batch (within
1e-5, float32). bf16 runs are checked within bf16's rounding. Parameter offload (stage 3) trains bit for bit as
without it. memory_breakdown() is checked
against the paper's formulas per stage, in float32 (K = 8: Adam's two moments) and bf16 (K = 12:
moments and the float32 master copy).
"""
import warnings

import torch

from common import Checker
from zero_common import (config, init, max_difference, new_engine, train_engine, train_reference)

STEPS = 4
TOLERANCE = 1e-5


def check_training(check, ranks, stage, optimizer, accumulation=1, clipping=0.0, tolerance=TOLERANCE, bf16=False,
                   **zero_options):
    cfg = config(stage, optimizer, accumulation, **zero_options)
    if clipping:
        cfg["gradient_clipping"] = clipping
    if bf16:
        cfg["bf16"] = {"enabled": True}
    engine = new_engine(cfg)
    train_engine(engine, 0, STEPS, accumulation)
    expected = train_reference(optimizer, STEPS, ranks, accumulation, clipping)
    difference = max_difference(engine.full_parameters(), expected)
    what = f"stage {stage} {optimizer} accumulation {accumulation} clipping {clipping} bf16 {bf16} {zero_options}"
    check.true(difference <= tolerance, f"{what}: parameters differ from torch.optim's by {difference:.3g} "
                                        f"(allowed {tolerance})")
    if not bf16:
        # The reference moved the parameters far more than the tolerance: the check can fail.
        start = {n: p.detach().clone() for n, p in new_engine(config(0)).module.named_parameters()}
        check.true(max_difference(start, expected) > 100 * tolerance, f"{what}: training did not move the parameters")
    if clipping:
        unclipped = train_reference(optimizer, STEPS, ranks, accumulation, 0.0)
        check.true(max_difference(unclipped, expected) > 100 * tolerance, f"{what}: clipping never took effect")


def check_memory(check, ranks, stage, bf16):
    cfg = config(stage, "Adam")
    if bf16:
        cfg["bf16"] = {"enabled": True}
    engine = new_engine(cfg)
    train_engine(engine, 0, 1, 1)
    psi = engine.layout.total
    low = 2 if bf16 else 4             # bytes per parameter and gradient in the model's dtype
    k = 12 if bf16 else 8              # optimizer bytes per parameter: moments (+ fp32 master)
    full = {"params": low * psi, "grads": low * psi, "optimizer_states": k * psi}
    sharded_from = {"optimizer_states": 1, "grads": 2, "params": 3}
    # What the model itself shows, independently of memory_breakdown(): from stage 2 no parameter
    # keeps a .grad (the gradients live in the shard), and in stage 3 no parameter keeps its values.
    params = list(engine.module.parameters())
    if stage >= 2:
        check.true(all(p.grad is None for p in params), f"stage {stage}: a parameter still holds a full gradient")
    held = sum(p.numel() for p in params)
    check.true((held == 0) == (stage == 3), f"stage {stage}: the model's parameters hold {held} elements")
    measured = engine.memory_breakdown()
    for key, stage_sharded in sharded_from.items():
        expected = full[key] / ranks if stage >= stage_sharded else full[key]
        ratio = measured[key] / expected
        check.true(abs(ratio - 1) <= 0.10, f"stage {stage} bf16 {bf16}: {key} {measured[key]} bytes, formula "
                                           f"{expected:.0f} (ratio {ratio:.3f}, allowed 1 +- 0.10)")


def check_parameter_offload(check, ranks, bf16):
    """Stage 3 with the parameter shard in host memory trains bit for bit as without: each gather
    copies this rank's piece in and gathers the rest around it (on the CPU, the same path as on a
    GPU), and each step copies the master into the shard."""
    results = []
    for offload in (False, True):
        options = {"offload_param": {"device": "cpu"}} if offload else {}
        cfg = config(3, "AdamW", 2, overlap_comm=True, stage3_prefetch_bucket_size=1100,
                     stage3_param_persistence_threshold=150, **options)
        cfg["gradient_clipping"] = 0.5
        if bf16:
            cfg["bf16"] = {"enabled": True}
        engine = new_engine(cfg)
        train_engine(engine, 0, STEPS, 2)
        results.append(engine.full_parameters())
    difference = max_difference(results[0], results[1])
    check.true(difference == 0, f"stage 3 bf16 {bf16}: parameter offload changed the parameters by {difference:.3g}")


def check_optimizer_offload(check, ranks):
    """ZeRO-Offload's engine path, run on the CPU by making the engine take it (on a GPU it is the
    one taken): the master and the step on the host trains bit for bit as without. In stages 2-3 the
    gradient comes down bucket by bucket in the last micro-step (prefetch, no fetch at the step);
    stage 1, and any step whose gradient did not all come down, fetches it at the step."""
    from torch_collective.zero.engine import ZeroEngine

    cases = [(1, {}), (2, {"overlap_comm": True, "reduce_bucket_size": 37}), (2, {"reduce_scatter": False}),
             (3, {"reduce_bucket_size": 101}), (3, {"offload_param": {"device": "cpu"}})]
    for stage, options in cases:
        for bf16 in (False, True):
            results, traces = [], []
            for offload in (False, True):
                extra = dict(options, offload_optimizer={"device": "cpu"}) if offload else options
                cfg = config(stage, "AdamW", 2, **extra)
                cfg["gradient_clipping"] = 0.5
                if bf16:
                    cfg["bf16"] = {"enabled": True}
                taken = ZeroEngine._offloads_optimizer
                if offload:
                    ZeroEngine._offloads_optimizer = lambda engine: engine.zero_config.offload_optimizer_device == "cpu"
                try:
                    engine = new_engine(cfg)
                finally:
                    ZeroEngine._offloads_optimizer = taken
                what = f"stage {stage} {options} bf16 {bf16}"
                if offload:
                    check.true(engine.offload is not None, f"{what}: the offload path was not taken")
                    engine.offload.trace = traces
                train_engine(engine, 0, STEPS, 2)
                results.append(engine.full_parameters())
            difference = max_difference(results[0], results[1])
            check.true(difference == 0, f"{what}: the optimizer offload changed the parameters by {difference:.3g}")
            kinds = {kind for kind, _ in traces}
            expected = {"prefetch", "step"} if stage >= 2 else {"fetch", "step"}
            check.true(expected <= kinds and not ({"prefetch", "fetch"} - expected) & kinds,
                       f"{what}: the gradient should come down by {'prefetch' if stage >= 2 else 'fetch'}: {sorted(kinds)}")


class ReadsItsChild(torch.nn.Module):
    """Uses its child's parameters without calling the child, as MultiheadAttention does."""

    def __init__(self):
        super().__init__()
        self.inner = torch.nn.Linear(6, 6)

    def forward(self, x):
        return torch.nn.functional.linear(x, self.inner.weight, self.inner.bias)


class AttentionModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Linear(5, 6)
        self.block = torch.nn.TransformerEncoderLayer(6, 2, 12, dropout=0.0, batch_first=True)
        self.reader = ReadsItsChild()
        self.head = torch.nn.Linear(6, 3)

    def forward(self, x):
        return self.head(self.reader(self.block(self.embed(x))).mean(1))


def check_leaf_modules(check, ranks, rank):
    """Stage 3 on modules that read their children's parameters directly: torch's attention (a
    leaf by default) and a module marked with set_leaf_modules train as stage 0 does."""
    from torch_collective import zero

    results = []
    for stage in (0, 3):
        torch.manual_seed(5)
        model = AttentionModel()
        zero.set_leaf_modules(model, [ReadsItsChild])
        cfg = config(stage, "AdamW")
        engine = zero.initialize(model=model, config=cfg)[0]
        for step in range(STEPS):
            generator = torch.Generator().manual_seed(50 + step)
            x = torch.randn(2 * ranks, 4, 5, generator=generator)[2 * rank:2 * rank + 2]
            y = torch.randn(2 * ranks, 3, generator=generator)[2 * rank:2 * rank + 2]
            engine.backward(torch.nn.functional.mse_loss(engine(x), y))
            engine.step()
        results.append(engine.full_parameters())
    difference = max_difference(results[1], results[0])
    check.true(difference <= TOLERANCE, f"stage 3 with leaf modules differs from stage 0 by {difference:.3g}")


def main():
    ranks, rank = init()
    check = Checker()
    warnings.simplefilter("error")  # an unexpected warning (e.g. an unknown config key) fails the test
    for stage in range(4):
        for optimizer in ("Adam", "AdamW", "SGD"):
            check_training(check, ranks, stage, optimizer)
        check_training(check, ranks, stage, "Adam", accumulation=3, clipping=0.5, reduce_bucket_size=37,
                       allgather_bucket_size=101)
        check_training(check, ranks, stage, "AdamW", overlap_comm=not (stage == 3), reduce_bucket_size=500)
        for bf16 in (False, True):
            check_memory(check, ranks, stage, bf16)
    for stage in (1, 2):
        check_training(check, ranks, stage, "SGD", accumulation=2, reduce_scatter=False, reduce_bucket_size=64)
    check_training(check, ranks, 3, "Adam", overlap_comm=True, stage3_prefetch_bucket_size=1100,
                   stage3_max_live_parameters=1200)
    check_training(check, ranks, 3, "Adam", stage3_param_persistence_threshold=150)
    for stage in range(4):
        # bf16 keeps 8 bits of mantissa: a step of 0.01 is resolved to about 1e-2 relative.
        check_training(check, ranks, stage, "AdamW", bf16=True, tolerance=0.05)
    check_training(check, ranks, 3, "Adam", accumulation=3, clipping=0.5, offload_param={"device": "cpu"})
    for bf16 in (False, True):
        check_parameter_offload(check, ranks, bf16)
    check_optimizer_offload(check, ranks)
    check_leaf_modules(check, ranks, rank)
    check.summary("test_zero_training")


if __name__ == "__main__":
    main()
