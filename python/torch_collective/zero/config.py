"""DeepSpeed-style configuration for torch_collective.zero.

`ZeroConfig.load(cfg, world_size)` takes the dict (or the path of a JSON file) that
deepspeed.initialize takes and checks it: an unknown key is a warning naming it, a bad value a
ValueError naming the key, the value and what is allowed. Defaults are DeepSpeed's.
"""
import json
import numbers
import os
import warnings
from dataclasses import dataclass, field

_PREFIX = "torch_collective.zero config"


def _bad(key, value, allowed):
    return ValueError(f"{_PREFIX}: {key} = {value!r}: expected {allowed}")


def _warn_unknown(section, known, where):
    for key in section:
        if key not in known:
            name = f"{where}.{key}" if where else key
            warnings.warn(f"{_PREFIX}: unknown key '{name}' is ignored", stacklevel=4)


def _get_bool(section, key, default, where):
    value = section.get(key, default)
    if not isinstance(value, bool):
        raise _bad(f"{where}{key}", value, "true or false")
    return value


def _get_int(section, key, default, where, minimum=0):
    """An integer (DeepSpeed configs often write 5e8: whole floats are accepted)."""
    value = section.get(key, default)
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or value != int(value) or value < minimum:
        raise _bad(f"{where}{key}", value, f"a whole number >= {minimum}")
    return int(value)


def _get_float(section, key, default, where, minimum=0.0, below=None):
    value = section.get(key, default)
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or value != value or value < minimum or (
            below is not None and value >= below):
        allowed = f"a number >= {minimum}" + (f" and < {below}" if below is not None else "")
        raise _bad(f"{where}{key}", value, allowed)
    return float(value)


def _get_section(config, key):
    value = config.get(key, {})
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _bad(key, value, "an object (dict)")
    return value


@dataclass
class OptimizerConfig:
    kind: str = "adamw"          # adam, adamw or sgd (what collZeroOptimizerStep runs)
    lr: float = 1e-3
    betas: tuple = (0.9, 0.999)
    eps: float = 1e-8
    weight_decay: float = 0.0
    momentum: float = 0.0
    dampening: float = 0.0
    nesterov: bool = False


@dataclass
class Fp16Config:
    enabled: bool = False
    loss_scale: float = 0.0      # 0: dynamic
    initial_scale_power: int = 16
    loss_scale_window: int = 1000
    hysteresis: int = 2
    min_loss_scale: float = 1.0


@dataclass
class ZeroOptimizationConfig:
    stage: int = 0
    reduce_bucket_size: int = 500_000_000
    allgather_bucket_size: int = 500_000_000
    overlap_comm: bool = False
    contiguous_gradients: bool = True
    reduce_scatter: bool = True
    offload_optimizer_device: str = "none"
    offload_param_device: str = "none"
    stage3_max_live_parameters: int = 1_000_000_000
    stage3_prefetch_bucket_size: int = 50_000_000
    stage3_param_persistence_threshold: int = 100_000


@dataclass
class SchedulerConfig:
    kind: str = "WarmupLR"        # one of lr_schedules.SCHEDULES
    params: dict = field(default_factory=dict)


@dataclass
class ZeroConfig:
    train_batch_size: int = 1
    train_micro_batch_size_per_gpu: int = 1
    gradient_accumulation_steps: int = 1
    optimizer: OptimizerConfig = None
    gradient_clipping: float = 0.0
    bf16: bool = False
    fp16: Fp16Config = field(default_factory=Fp16Config)
    zero: ZeroOptimizationConfig = field(default_factory=ZeroOptimizationConfig)
    steps_per_print: int = 0       # 0: no progress lines (DeepSpeed prints every 10 steps by default)
    scheduler: SchedulerConfig = None
    raw: dict = field(default_factory=dict)

    @staticmethod
    def load(config, world_size):
        """Parses `config` (a dict, or a path to a JSON file) for `world_size` data-parallel ranks."""
        if isinstance(config, (str, os.PathLike)):
            try:
                with open(config) as file:
                    config = json.load(file)
            except OSError as error:
                raise ValueError(f"{_PREFIX}: cannot read {config}: {error.strerror}") from None
            except json.JSONDecodeError as error:
                raise ValueError(f"{_PREFIX}: {config} is not valid JSON: {error}") from None
        if not isinstance(config, dict):
            raise ValueError(f"{_PREFIX}: expected a dict or the path of a JSON file, got {type(config).__name__}")
        result = ZeroConfig(raw=dict(config))
        _warn_unknown(config, _TOP_LEVEL_KEYS, "")
        result._load_batch(config, world_size)
        result.optimizer = _load_optimizer(config)
        result.gradient_clipping = _get_float(config, "gradient_clipping", 0.0, "")
        result.steps_per_print = _get_int(config, "steps_per_print", 0, "")
        bf16 = _get_section(config, "bf16")
        _warn_unknown(bf16, {"enabled"}, "bf16")
        result.bf16 = _get_bool(bf16, "enabled", False, "bf16.")
        result.fp16 = _load_fp16(_get_section(config, "fp16"))
        if result.bf16 and result.fp16.enabled:
            raise ValueError(f"{_PREFIX}: bf16.enabled and fp16.enabled are both true: expected at most one")
        result.zero = _load_zero(_get_section(config, "zero_optimization"))
        result.scheduler = _load_scheduler(config)
        return result

    def _load_batch(self, config, world_size):
        """DeepSpeed's rule: train_batch_size = micro batch x accumulation steps x ranks; any two give
        the third, all three must agree."""
        keys = ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps")
        given = {key: _get_int(config, key, None, "", minimum=1) for key in keys if config.get(key) is not None}
        total = given.get(keys[0])
        micro = given.get(keys[1])
        steps = given.get(keys[2])
        if total is None and micro is None:
            raise ValueError(f"{_PREFIX}: train_batch_size or train_micro_batch_size_per_gpu must be given")
        if total is None:
            steps = steps or 1
            total = micro * steps * world_size
        elif micro is None:
            steps = steps or 1
            if total % (steps * world_size):
                raise _bad("train_batch_size", total,
                           f"a multiple of gradient_accumulation_steps ({steps}) x ranks ({world_size})")
            micro = total // (steps * world_size)
        elif steps is None:
            if total % (micro * world_size):
                raise _bad("train_batch_size", total,
                           f"a multiple of train_micro_batch_size_per_gpu ({micro}) x ranks ({world_size})")
            steps = total // (micro * world_size)
        if total != micro * steps * world_size:
            raise _bad("train_batch_size", total,
                       f"train_micro_batch_size_per_gpu ({micro}) x gradient_accumulation_steps ({steps}) x "
                       f"ranks ({world_size}) = {micro * steps * world_size}")
        self.train_batch_size, self.train_micro_batch_size_per_gpu, self.gradient_accumulation_steps = \
            total, micro, steps


_TOP_LEVEL_KEYS = {
    "train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps", "optimizer",
    "gradient_clipping", "bf16", "fp16", "zero_optimization", "steps_per_print", "wall_clock_breakdown",
    "scheduler",
}


_SCHEDULER_PARAMS = {"warmup_min_lr": float, "warmup_max_lr": float, "warmup_num_steps": int, "warmup_type": str,
                     "total_num_steps": int}


def _load_scheduler(config):
    """DeepSpeed's "scheduler" entry: WarmupLR or WarmupDecayLR; another type is an error (training
    with a different schedule than the config asks for would go unnoticed)."""
    if config.get("scheduler") is None:
        return None
    from .lr_schedules import SCHEDULES

    section = _get_section(config, "scheduler")
    _warn_unknown(section, {"type", "params"}, "scheduler")
    kind = section.get("type")
    if kind not in SCHEDULES:
        raise _bad("scheduler.type", kind, " or ".join(SCHEDULES))
    params = section.get("params") or {}
    if not isinstance(params, dict):
        raise _bad("scheduler.params", params, "an object")
    allowed = dict(_SCHEDULER_PARAMS)
    if kind == "WarmupLR":
        del allowed["total_num_steps"]
    _warn_unknown(params, set(allowed), "scheduler.params")
    parsed = {}
    for key, kind_of in allowed.items():
        if key not in params:
            continue
        if kind_of is str:
            if params[key] not in ("log", "linear"):
                raise _bad(f"scheduler.params.{key}", params[key], "log or linear")
            parsed[key] = params[key]
        elif kind_of is int:
            parsed[key] = _get_int(params, key, None, "scheduler.params.")
        else:
            parsed[key] = _get_float(params, key, None, "scheduler.params.")
    if kind == "WarmupDecayLR" and "total_num_steps" not in parsed:
        raise ValueError(f"{_PREFIX}: scheduler WarmupDecayLR needs params.total_num_steps")
    return SchedulerConfig(kind=kind, params=parsed)


def _load_optimizer(config):
    if "optimizer" not in config or config["optimizer"] is None:
        return None
    section = _get_section(config, "optimizer")
    _warn_unknown(section, {"type", "params"}, "optimizer")
    name = section.get("type")
    if not isinstance(name, str) or name.lower() not in ("adam", "adamw", "sgd"):
        raise _bad("optimizer.type", name, "Adam, AdamW or SGD")
    params = section.get("params", {}) or {}
    if not isinstance(params, dict):
        raise _bad("optimizer.params", params, "an object (dict)")
    where = "optimizer.params."
    result = OptimizerConfig()
    result.lr = _get_float(params, "lr", 1e-3, where)
    result.weight_decay = _get_float(params, "weight_decay", 0.0, where)
    if name.lower() == "sgd":
        _warn_unknown(params, {"lr", "momentum", "dampening", "weight_decay", "nesterov"}, "optimizer.params")
        result.kind = "sgd"
        result.momentum = _get_float(params, "momentum", 0.0, where)
        result.dampening = _get_float(params, "dampening", 0.0, where)
        result.nesterov = _get_bool(params, "nesterov", False, where)
        if result.nesterov and (result.momentum <= 0 or result.dampening != 0):
            raise _bad("optimizer.params.nesterov", True, "false unless momentum > 0 and dampening = 0 (as torch.optim.SGD)")
        return result
    _warn_unknown(params, {"lr", "betas", "eps", "weight_decay", "adam_w_mode", "amsgrad", "torch_adam"},
                  "optimizer.params")
    betas = params.get("betas", (0.9, 0.999))
    if (not isinstance(betas, (list, tuple)) or len(betas) != 2
            or not all(isinstance(b, numbers.Real) and not isinstance(b, bool) and 0 <= b < 1 for b in betas)):
        raise _bad("optimizer.params.betas", betas, "two numbers in [0, 1)")
    result.betas = (float(betas[0]), float(betas[1]))
    result.eps = _get_float(params, "eps", 1e-8, where)
    if result.eps <= 0:
        raise _bad("optimizer.params.eps", result.eps, "a number > 0")
    if params.get("amsgrad", False) is not False:
        raise _bad("optimizer.params.amsgrad", params["amsgrad"], "false (AMSGrad is not supported)")
    # As DeepSpeed: "Adam" applies weight decay decoupled (AdamW) unless adam_w_mode is false.
    adam_w_mode = _get_bool(params, "adam_w_mode", True, where)
    result.kind = "adamw" if name.lower() == "adamw" or adam_w_mode else "adam"
    return result


def _load_fp16(section):
    _warn_unknown(section, {"enabled", "loss_scale", "initial_scale_power", "loss_scale_window", "hysteresis",
                            "min_loss_scale", "auto_cast"}, "fp16")
    where = "fp16."
    result = Fp16Config()
    result.enabled = _get_bool(section, "enabled", False, where)
    result.loss_scale = _get_float(section, "loss_scale", 0.0, where)
    result.initial_scale_power = _get_int(section, "initial_scale_power", 16, where)
    result.loss_scale_window = _get_int(section, "loss_scale_window", 1000, where, minimum=1)
    result.hysteresis = _get_int(section, "hysteresis", 2, where, minimum=1)
    result.min_loss_scale = _get_float(section, "min_loss_scale", 1.0, where)
    if result.min_loss_scale <= 0:
        raise _bad("fp16.min_loss_scale", result.min_loss_scale, "a number > 0")
    return result


_ZERO_KEYS = {
    "stage", "reduce_bucket_size", "allgather_bucket_size", "overlap_comm", "contiguous_gradients", "reduce_scatter",
    "allgather_partitions", "offload_optimizer", "offload_param", "stage3_max_live_parameters", "stage3_prefetch_bucket_size",
    "stage3_param_persistence_threshold",
}


def _load_zero(section):
    _warn_unknown(section, _ZERO_KEYS, "zero_optimization")
    where = "zero_optimization."
    result = ZeroOptimizationConfig()
    stage = section.get("stage", 0)
    if isinstance(stage, bool) or stage not in (0, 1, 2, 3):
        raise _bad("zero_optimization.stage", stage, "0, 1, 2 or 3")
    result.stage = int(stage)
    result.reduce_bucket_size = _get_int(section, "reduce_bucket_size", result.reduce_bucket_size, where, minimum=1)
    result.allgather_bucket_size = _get_int(section, "allgather_bucket_size", result.allgather_bucket_size, where,
                                            minimum=1)
    # DeepSpeed overlaps by default only in stage 3.
    result.overlap_comm = _get_bool(section, "overlap_comm", result.stage == 3, where)
    result.contiguous_gradients = _get_bool(section, "contiguous_gradients", True, where)
    result.reduce_scatter = _get_bool(section, "reduce_scatter", True, where)
    _get_bool(section, "allgather_partitions", True, where)
    result.offload_optimizer_device = _offload_device(section, "offload_optimizer", {"fast_init"})
    result.offload_param_device = _offload_device(section, "offload_param", {"buffer_size", "max_in_cpu"})
    if result.offload_param_device == "cpu" and result.stage != 3:
        raise _bad("zero_optimization.offload_param.device", "cpu",
                   f"'none' at stage {result.stage} (parameters are offloaded in stage 3 only, where they are "
                   "partitioned)")
    result.stage3_max_live_parameters = _get_int(section, "stage3_max_live_parameters",
                                                 result.stage3_max_live_parameters, where)
    result.stage3_prefetch_bucket_size = _get_int(section, "stage3_prefetch_bucket_size",
                                                  result.stage3_prefetch_bucket_size, where)
    result.stage3_param_persistence_threshold = _get_int(section, "stage3_param_persistence_threshold",
                                                         result.stage3_param_persistence_threshold, where)
    return result


def _offload_device(section, name, extra_keys):
    """zero_optimization.<name>.device: 'cpu' or 'none'; the section's other keys tune DeepSpeed's
    buffers and are accepted."""
    offload = section.get(name, {}) or {}
    where = f"zero_optimization.{name}"
    if not isinstance(offload, dict):
        raise _bad(where, offload, "an object (dict)")
    _warn_unknown(offload, {"device", "pin_memory", "buffer_count"} | extra_keys, where)
    device = offload.get("device", "none")
    if device not in ("none", "cpu"):
        raise _bad(f"{where}.device", device, "'cpu' or 'none' (nvme is not supported)")
    return device


def optimizer_from_torch(optimizer):
    """The OptimizerConfig of a torch.optim.Adam, AdamW or SGD instance given to initialize()."""
    import torch

    if len(optimizer.param_groups) != 1:
        raise ValueError("torch_collective.zero: the optimizer has "
                         f"{len(optimizer.param_groups)} parameter groups: expected one")
    group = optimizer.param_groups[0]
    result = OptimizerConfig(lr=float(group["lr"]), weight_decay=float(group.get("weight_decay", 0.0)))
    if isinstance(optimizer, torch.optim.AdamW) or type(optimizer) is torch.optim.Adam:
        if group.get("amsgrad", False) or group.get("maximize", False):
            raise ValueError("torch_collective.zero: amsgrad and maximize are not supported")
        result.kind = "adamw" if isinstance(optimizer, torch.optim.AdamW) else "adam"
        result.betas = tuple(float(b) for b in group["betas"])
        result.eps = float(group["eps"])
    elif type(optimizer) is torch.optim.SGD:
        if group.get("maximize", False):
            raise ValueError("torch_collective.zero: maximize is not supported")
        result.kind = "sgd"
        result.momentum = float(group["momentum"])
        result.dampening = float(group["dampening"])
        result.nesterov = bool(group["nesterov"])
    else:
        raise ValueError(f"torch_collective.zero: optimizer {type(optimizer).__name__}: expected torch.optim.Adam, "
                         "AdamW or SGD (or an \"optimizer\" entry in the config)")
    return result
