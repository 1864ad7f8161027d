"""The ZeRO engine's configuration, its errors and its fp16 loss scaling.

    collrun -n 2 /usr/bin/python3 tests/python/test_zero_config.py

A bad value is a ValueError naming the key, the value and what is allowed; an unknown key is a
warning naming it; a JSON file works like the dict; a checkpoint of another model, or of another
optimizer, is refused with a message naming the difference; the config's "scheduler" (WarmupLR,
WarmupDecayLR) sets each step's learning rate as DeepSpeed's rule (and, where DeepSpeed is
installed, DeepSpeed's own schedule) does. fp16 (on a model of element-wise ops,
the only ones torch 1.13 runs in half precision on the CPU): a static loss scale trains like
float32 within fp16's rounding; a dynamic scale that starts too high skips the overflowing steps
without touching the parameters and halves until the steps go through.
"""
import json
import os
import shutil
import tempfile
import warnings

import torch
import torch.distributed as dist
import torch.nn as nn

from common import Checker
import torch_collective
from torch_collective import zero
from zero_common import config, init, make_model, max_difference, new_engine, train_engine, train_reference

BAD_VALUES = [
    ({"zero_optimization": {"stage": 4}}, "zero_optimization.stage = 4"),
    ({"zero_optimization": {"stage": "2"}}, "zero_optimization.stage = '2'"),
    ({"zero_optimization": {"reduce_bucket_size": 0}}, "zero_optimization.reduce_bucket_size = 0"),
    ({"zero_optimization": {"allgather_bucket_size": 2.5}}, "zero_optimization.allgather_bucket_size = 2.5"),
    ({"zero_optimization": {"overlap_comm": "yes"}}, "zero_optimization.overlap_comm = 'yes'"),
    ({"zero_optimization": {"offload_optimizer": {"device": "nvme"}}},
     "zero_optimization.offload_optimizer.device = 'nvme'"),
    ({"zero_optimization": {"offload_param": {"device": "nvme"}, "stage": 3}},
     "zero_optimization.offload_param.device = 'nvme'"),
    ({"zero_optimization": {"offload_param": {"device": "cpu"}, "stage": 2}},
     "zero_optimization.offload_param.device = 'cpu': expected 'none' at stage 2"),
    ({"zero_optimization": {"stage3_max_live_parameters": -1}}, "zero_optimization.stage3_max_live_parameters = -1"),
    ({"optimizer": {"type": "Lamb"}}, "optimizer.type = 'Lamb'"),
    ({"optimizer": {"type": "Adam", "params": {"betas": [0.9]}}}, "optimizer.params.betas = [0.9]"),
    ({"optimizer": {"type": "Adam", "params": {"eps": 0}}}, "optimizer.params.eps = 0"),
    ({"optimizer": {"type": "Adam", "params": {"lr": -1}}}, "optimizer.params.lr = -1"),
    ({"optimizer": {"type": "SGD", "params": {"nesterov": True}}}, "optimizer.params.nesterov = True"),
    ({"gradient_clipping": -1.0}, "gradient_clipping = -1.0"),
    ({"bf16": {"enabled": 1}}, "bf16.enabled = 1"),
    ({"bf16": {"enabled": True}, "fp16": {"enabled": True}}, "bf16.enabled and fp16.enabled are both true"),
    ({"fp16": {"min_loss_scale": 0}}, "fp16.min_loss_scale = 0"),
    ({"train_batch_size": 10, "gradient_accumulation_steps": 1}, "train_batch_size = 10"),
    ({"train_micro_batch_size_per_gpu": None}, "train_batch_size or train_micro_batch_size_per_gpu must be given"),
    ({"scheduler": {"type": "OneCycle"}}, "scheduler.type = 'OneCycle'"),
    ({"scheduler": {"type": "WarmupDecayLR", "params": {"warmup_num_steps": 3}}},
     "WarmupDecayLR needs params.total_num_steps"),
    ({"scheduler": {"type": "WarmupLR", "params": {"warmup_type": "cosine"}}},
     "scheduler.params.warmup_type = 'cosine'"),
    ({"scheduler": {"type": "WarmupLR", "params": {"warmup_max_lr": -0.1}}}, "scheduler.params.warmup_max_lr = -0.1"),
]

UNKNOWN_KEYS = [
    ({"optimiser": {}}, "'optimiser'"),
    ({"zero_optimization": {"stage": 1, "sub_group_size": 5}}, "'zero_optimization.sub_group_size'"),
    ({"zero_optimization": {"stage": 3, "offload_param": {"device": "cpu", "pinned": True}}},
     "'zero_optimization.offload_param.pinned'"),
    ({"optimizer": {"type": "AdamW", "params": {"lr": 0.1, "decay": 1}}}, "'optimizer.params.decay'"),
    ({"scheduler": {"type": "WarmupLR", "params": {"total_num_steps": 9}}}, "'scheduler.params.total_num_steps'"),
]


def expected_schedule(kind, params, steps):
    """The learning rate after each of `steps` optimizer steps, from DeepSpeed's documented rule
    (computed here, not by the engine): a log or linear ramp from warmup_min_lr to warmup_max_lr
    over warmup_num_steps (at least 2), then flat (WarmupLR) or falling linearly to 0 at
    total_num_steps (WarmupDecayLR). The schedule counts from 0: the first step() moves it to
    iteration 0, still warmup_min_lr."""
    import math

    low, high = params.get("warmup_min_lr", 0.0), params.get("warmup_max_lr", 0.001)
    warmup = max(2, params.get("warmup_num_steps", 1000))
    rates = []
    for step in range(steps):
        if step < warmup:
            ramp = step / warmup if params.get("warmup_type") == "linear" else math.log(step + 1) / math.log(warmup)
        elif kind == "WarmupLR":
            ramp = 1.0
        else:
            total = params["total_num_steps"]
            ramp = max(0.0, (total - step) / max(1.0, total - warmup))
        rates.append(low + (high - low) * ramp)
    return rates


def check_scheduler(check):
    """The config's "scheduler" drives the learning rate as DeepSpeed's would: against the rule,
    and against DeepSpeed's own schedule where DeepSpeed is installed."""
    cases = [("WarmupLR", {"warmup_min_lr": 0.001, "warmup_max_lr": 0.02, "warmup_num_steps": 4}),
             ("WarmupLR", {"warmup_max_lr": 0.05, "warmup_num_steps": 3, "warmup_type": "linear"}),
             ("WarmupDecayLR", {"warmup_max_lr": 0.03, "warmup_num_steps": 2, "total_num_steps": 6})]
    for kind, params in cases:
        cfg = config(1)
        cfg["scheduler"] = {"type": kind, "params": params}
        model = make_model()
        engine, _, _, scheduler = zero.initialize(model=model, model_parameters=model.parameters(), config=cfg)
        check.true(scheduler is not None and engine.lr_scheduler is scheduler, f"{kind}: no schedule was built")
        seen = []
        for step in range(7):
            train_engine(engine, step, 1, 1)
            seen.append(engine.get_lr()[0])
        expected = expected_schedule(kind, params, 7)
        check.true(all(abs(a - b) <= 1e-12 for a, b in zip(seen, expected)),
                   f"{kind} {params}: learning rates {seen}, expected {expected}")
        try:
            from deepspeed.runtime import lr_schedules as deepspeed_schedules
        except ImportError:
            continue
        optimizer = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1.0)
        theirs = getattr(deepspeed_schedules, kind)(optimizer, **params)
        rates = []
        for _ in range(7):
            theirs.step()
            rates.append(optimizer.param_groups[0]["lr"])
        check.true(all(abs(a - b) <= 1e-12 for a, b in zip(seen, rates)),
                   f"{kind} {params}: ours {seen}, DeepSpeed's {rates}")


def with_changes(changes):
    cfg = config(1)
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(cfg.get(key), dict):
            merged = dict(cfg[key])
            merged.update(value)
            cfg[key] = merged
        elif value is None:
            cfg.pop(key, None)
        else:
            cfg[key] = value
    return cfg


def expect_error(check, error_type, fragment, what, call):
    try:
        call()
    except error_type as error:
        check.true(fragment in str(error), f"{what}: the error '{error}' does not name '{fragment}'")
        return
    check.fail(f"{what}: no {error_type.__name__} (expected one naming '{fragment}')")


def check_configs(check, directory):
    for changes, fragment in BAD_VALUES:
        expect_error(check, ValueError, fragment, f"config {changes}", lambda: new_engine(with_changes(changes)))
    for changes, fragment in UNKNOWN_KEYS:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            new_engine(with_changes(changes))
        messages = [str(w.message) for w in caught]
        check.true(any(fragment in m and "unknown key" in m for m in messages),
                   f"config {changes}: no warning naming {fragment} (got {messages})")
    # The directory is shared by every rank (rank 0 made it): each writes files of its own, or one
    # rank's truncating write races another's read (an empty file, "not valid JSON").
    mine = f"rank{dist.get_rank()}"
    path = os.path.join(directory, f"ds_config_{mine}.json")
    with open(path, "w") as file:
        json.dump(config(2, "SGD", accumulation=2), file)
    from_file = new_engine(path)
    check.true(from_file.stage == 2 and from_file.gradient_accumulation_steps() == 2
               and from_file.optimizer.kind == "sgd", "the JSON file's settings were not taken")
    broken = os.path.join(directory, f"broken_{mine}.json")
    with open(broken, "w") as file:
        file.write("{ not json")
    expect_error(check, ValueError, "is not valid JSON", "a broken JSON file", lambda: new_engine(broken))
    expect_error(check, ValueError, "cannot read", "a missing file", lambda: new_engine("/nonexistent/ds.json"))


def check_optimizer_arguments(check):
    model = make_model()
    torch_optimizer = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=0.01)
    cfg = config(2)
    del cfg["optimizer"]
    engine, optimizer, _, _ = zero.initialize(model=model, optimizer=torch_optimizer, config=cfg)
    train_engine(engine, 0, 3, 1)
    difference = max_difference(engine.full_parameters(), train_reference("Adam", 3, engine.world_size, 1))
    check.true(difference <= 1e-5, f"a torch.optim.Adam passed in trains differently ({difference:.3g})")
    expect_error(check, ValueError, "no optimizer", "no optimizer at all",
                 lambda: zero.initialize(model=make_model(), config=cfg))
    expect_error(check, ValueError, "give one of them", "two optimizers",
                 lambda: zero.initialize(model=make_model(), optimizer=torch_optimizer, config=config(1)))
    expect_error(check, RuntimeError, "call engine.step()", "optimizer.step()", lambda: optimizer.step())
    expect_error(check, ValueError, "expected the model in float32", "a float64 model",
                 lambda: zero.initialize(model=make_model().double(), config=config(1)))
    expect_error(check, ValueError, "expected the model on the CPU or on one CUDA device", "a model on meta",
                 lambda: zero.initialize(model=make_model().to("meta"), config=config(1)))
    if not torch_collective.cuda_support:
        # Only a CUDA build takes CUDA models; a CPU-only torch cannot make one, so the refusal
        # is checked where torch has CUDA and this build does not.
        if torch.cuda.is_available():
            expect_error(check, ValueError, "cuda_support is False", "a CUDA model in a CPU-only build",
                         lambda: zero.initialize(model=make_model().cuda(), config=config(1)))


class Wider(nn.Module):
    """SmallCnn with a wider first linear layer: another model for the checkpoint checks."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 5, 3, padding=1)
        self.fc1 = nn.Linear(80, 14)
        self.fc2 = nn.Linear(14, 7)


def check_checkpoint_errors(check, directory):
    engine = new_engine(config(2))
    train_engine(engine, 0, 1, 1)
    save_dir = os.path.join(directory, "ckpt")
    engine.save_checkpoint(save_dir)
    other = Wider()
    other_engine, _, _, _ = zero.initialize(model=other, config=config(2))
    expect_error(check, ValueError, "'fc1.weight' of shape [13, 80]", "a checkpoint of another model",
                 lambda: other_engine.load_checkpoint(save_dir))
    sgd = new_engine(config(2, "SGD"))
    expect_error(check, ValueError, "holds adam state", "a checkpoint of another optimizer",
                 lambda: sgd.load_checkpoint(save_dir))
    path, _ = sgd.load_checkpoint(save_dir, load_optimizer_states=False)
    check.true(path is not None, "load_optimizer_states=False did not load the parameters")
    empty = os.path.join(directory, "empty")
    os.makedirs(empty, exist_ok=True)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        result = engine.load_checkpoint(empty)
    check.true(result == (None, None), f"loading from a directory without 'latest' gave {result}")
    expect_error(check, ValueError, "is not a checkpoint", "a tag that does not exist",
                 lambda: engine.load_checkpoint(save_dir, tag="nonexistent"))


class ScaleShift(nn.Module):
    """y = x * weight + bias, element-wise: runs in float16 on the CPU."""

    def __init__(self, width):
        super().__init__()
        torch.manual_seed(3)
        self.weight = nn.Parameter(torch.rand(width) + 0.5)
        self.bias = nn.Parameter(torch.rand(width) - 0.5)

    def forward(self, x):
        return x * self.weight + self.bias


def fp16_engine(fp16, stage):
    cfg = {"train_micro_batch_size_per_gpu": 4, "optimizer": {"type": "SGD", "params": {"lr": 0.05}},
           "fp16": fp16, "zero_optimization": {"stage": stage, "stage3_param_persistence_threshold": 0}}
    model = ScaleShift(37)
    engine, _, _, _ = zero.initialize(model=model, config=cfg)
    return engine


def fp16_step(engine, step):
    generator = torch.Generator().manual_seed(step)
    x = torch.randn(4 * engine.world_size, 37, generator=generator)
    target = x * 1.5 - 0.25
    mine = slice(engine.rank * 4, engine.rank * 4 + 4)
    loss = ((engine(x[mine]) - target[mine].half()) ** 2).float().mean()
    engine.backward(loss)
    engine.step()
    return x, target


def check_fp16(check):
    for stage in (0, 2, 3):
        engine = fp16_engine({"enabled": True, "loss_scale": 128}, stage)
        reference = ScaleShift(37)
        optimizer = torch.optim.SGD(reference.parameters(), lr=0.05)
        for step in range(5):
            x, target = fp16_step(engine, step)
            optimizer.zero_grad()
            ((reference(x) - target) ** 2).mean().backward()
            optimizer.step()
        expected = {n: p.detach() for n, p in reference.named_parameters()}
        difference = max_difference(engine.full_parameters(), expected)
        check.true(difference <= 1e-2, f"fp16 stage {stage}, static loss scale: off by {difference:.3g} "
                                       "(allowed 1e-2)")
        dynamic = fp16_engine({"enabled": True, "loss_scale": 0, "initial_scale_power": 24, "hysteresis": 1}, stage)
        before = dynamic.full_parameters()
        fp16_step(dynamic, 0)
        check.true(dynamic.skipped_steps == 1 and dynamic.loss_scaler.scale == 2.0 ** 23,
                   f"fp16 stage {stage}: an overflowing step was not skipped (skipped {dynamic.skipped_steps}, "
                   f"scale {dynamic.loss_scaler.scale})")
        check.true(max_difference(dynamic.full_parameters(), before) == 0,
                   f"fp16 stage {stage}: a skipped step changed the parameters")
        for step in range(1, 30):
            fp16_step(dynamic, step)
        check.true(dynamic.skipped_steps < 30 and max_difference(dynamic.full_parameters(), before) > 0,
                   f"fp16 stage {stage}: the dynamic loss scale never let a step through")


def main():
    init()
    check = Checker()
    directory = [tempfile.mkdtemp(prefix="zero_cfg_") if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(directory, src=0)
    directory = directory[0]
    try:
        check_configs(check, directory)
        check_optimizer_arguments(check)
        check_checkpoint_errors(check, directory)
        check_scheduler(check)
        check_fp16(check)
        check.summary("test_zero_config")
    finally:
        dist.barrier()
        if dist.get_rank() == 0:
            shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
