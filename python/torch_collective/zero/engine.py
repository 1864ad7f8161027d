"""The ZeRO engine: DeepSpeed's call shapes (engine(x), engine.backward(loss), engine.step()) over
libcollective's sharded reduce-scatter, all-gather and optimizer steps.

What each rank holds, Ψ parameters over N ranks (docs/zero.md has the table):
  stage 0: everything (data parallelism: gradients all-reduced, every rank steps all of it);
  stage 1: optimizer state for its shard only; gradients reduced into their owners' shards at the
           step, each rank updates its shard, the updated shards are gathered back;
  stage 2: and gradients for its shard only, reduced bucket by bucket during backward;
  stage 3: and parameters for its shard only, gathered around each module's forward and backward.

Offload (a model on a GPU): offload_optimizer keeps the float32 master, the state and the step in
host memory (offload.py); offload_param, in stage 3, keeps the parameter shard there too
(stage3.py), so the device holds only the gathered parameters, the gradients and what the
optimizer keeps on it.
"""
import time

import torch
import torch.distributed as dist

from .. import _C
from . import checkpoint
from .config import ZeroConfig, optimizer_from_torch
from .gradients import BucketReducer
from .layout import FlatLayout
from .loss_scaler import LossScaler
from .offload import OptimizerOffload
from .optimizer import ZeroOptimizer
from .stage3 import ParameterGatherer


def backend_of(group, device=None):
    """The object torch_collective._C's ZeRO functions take: the group on torch 1.x, its backend
    for `device` (default the CPU) on torch 2.x."""
    if hasattr(group, "_get_backend"):
        return group._get_backend(device if device is not None else torch.device("cpu"))
    return group


def _trainable(model_parameters, model):
    if model_parameters is None:
        params = list(model.parameters())
    else:
        params = list(model_parameters)
        if params and isinstance(params[0], dict):
            if len(params) != 1:
                raise ValueError(f"torch_collective.zero: {len(params)} parameter groups given: expected one "
                                 "(one set of optimizer settings)")
            params = list(params[0]["params"])
    params = [p for p in params if p.requires_grad]
    for p in params:
        if p.device.type not in ("cpu", "cuda"):
            raise ValueError(f"torch_collective.zero: a parameter is on {p.device}: expected the model on the CPU or "
                             "on one CUDA device")
        if p.device.type == "cuda" and not _cuda_support():
            raise ValueError(f"torch_collective.zero: a parameter is on {p.device}, but this build of "
                             "torch_collective takes CPU tensors only (torch_collective.cuda_support is False; "
                             "docs/cuda.md says how to build it with CUDA)")
        if p.device != params[0].device:
            raise ValueError(f"torch_collective.zero: parameters on {params[0].device} and on {p.device}: expected "
                             "the whole model on one device")
        if p.dtype != torch.float32:
            raise ValueError(f"torch_collective.zero: a parameter has dtype {p.dtype}: expected the model in float32 "
                             "(bf16.enabled / fp16.enabled convert it)")
    return params


def _cuda_support():
    return bool(getattr(_C, "cuda_support", False))


class ZeroEngine:
    def __init__(self, model, model_parameters=None, config=None, optimizer=None, lr_scheduler=None, group=None):
        if not dist.is_initialized():
            dist.init_process_group("collective")
        self.group = group if group is not None else dist.distributed_c10d._get_default_group()
        self.world_size = dist.get_world_size(self.group)
        self.rank = dist.get_rank(self.group)
        if config is None:
            raise ValueError("torch_collective.zero: config is required (a DeepSpeed-style dict or JSON path)")
        self.config = ZeroConfig.load(config, self.world_size)
        self.zero_config = self.config.zero
        self.stage = self.zero_config.stage
        if optimizer is not None and self.config.optimizer is not None:
            raise ValueError("torch_collective.zero: an optimizer was passed and the config has an \"optimizer\" "
                             "entry: give one of them")
        if optimizer is None and self.config.optimizer is None:
            raise ValueError("torch_collective.zero: no optimizer: pass optimizer= or put an \"optimizer\" entry in "
                             "the config")
        optimizer_config = self.config.optimizer or optimizer_from_torch(optimizer)
        params = _trainable(model_parameters, model)
        # Where the model lives: the flat buffers, the shards and the optimizer state go there too.
        self.device = params[0].device if params else torch.device("cpu")
        self.backend = backend_of(self.group, self.device)
        self.module = model
        self.dtype = torch.bfloat16 if self.config.bf16 else torch.float16 if self.config.fp16.enabled else torch.float32
        self.mixed = self.dtype != torch.float32
        self.layout = FlatLayout(model, self.world_size, self.rank, only=params)
        self.gas = self.config.gradient_accumulation_steps
        self.micro_steps = 0
        self.global_steps = 0
        self.skipped_steps = 0
        self.loss_scaler = LossScaler(self.config.fp16)
        self.lr_scheduler = lr_scheduler
        self._last_step_at = -1       # micro_steps at the last step(), so a second call does nothing
        self._last_report = None      # perf_counter at the last progress line

        # Parameter offload: the stage-3 parameter shard in host memory (on any device, so that a
        # CPU run takes the same gathers as a GPU run).
        self.param_offload = self.zero_config.offload_param_device == "cpu"
        # Stage 3 never holds the whole flat buffer beside the model: its shard comes parameter by
        # parameter, each parameter freed as its values arrive (the largest model that fits is set by
        # this setup as much as by training).
        values = self._rank0_values() if self.stage < 3 else self._rank0_shard()
        if self.mixed:
            model.to(self.dtype)
        self._place_parameters(values)
        master, param_out = self._master(values)
        del values
        self._place_gradients()
        # ZeRO-Offload: for a model on a GPU, the master weights, the state and the step on the host.
        offload = self._offloads_optimizer()
        if offload:
            master, param_out = self._host_master(master), None
        self.optimizer = ZeroOptimizer(params, optimizer_config, master, param_out)
        self.offload = OptimizerOffload(self.optimizer, self.param_shard, self.device,
                                        params_on_host=self.param_offload) if offload else None
        if self.stage >= 2:
            self._register_gradient_hooks()
        if self.stage == 3:
            self.gatherer = ParameterGatherer(self.layout, self.backend, self.param_shard, self.zero_config,
                                              self.device)
            self.gatherer.register(model)
            self.gatherer.partition_parameters()

    # -- setup ------------------------------------------------------------------------------------

    def _offloads_optimizer(self):
        """ZeRO-Offload applies: offload_optimizer.device cpu, stage 1 or more, a model on a GPU (on
        the CPU the optimizer is in host memory already)."""
        return self.zero_config.offload_optimizer_device == "cpu" and self.stage >= 1 and self.device.type == "cuda"

    def _rank0_values(self):
        """Rank 0's parameters as one flat float32 buffer, on every rank (as DeepSpeed, which
        broadcasts them, so that ranks that seeded differently still start alike)."""
        full = torch.zeros(self.layout.padded, dtype=torch.float32, device=self.device)
        for slot in self.layout.slots:
            full[slot.offset:slot.offset + slot.numel].copy_(slot.param.detach().reshape(-1))
        dist.broadcast(full, 0, group=self.group)
        return full

    def _rank0_shard(self):
        """Stage 3: rank 0's values of this rank's shard, as float32, from one broadcast per
        parameter; each parameter's own memory is let go once its values are in."""
        begin, end = self.layout.shard_range()
        shard = torch.zeros(end - begin, dtype=torch.float32, device=self.device)
        for slot in self.layout.slots:
            values = slot.param.detach().reshape(-1).to(torch.float32, copy=True)
            dist.broadcast(values, 0, group=self.group)
            lo, hi = max(begin, slot.offset), min(end, slot.offset + slot.numel)
            if lo < hi:
                shard[lo - begin:hi - begin].copy_(values[lo - slot.offset:hi - slot.offset])
            # One element seen in the parameter's shape (and the dtype the model is cast to): autograd
            # records both when the gradient hooks are set, before the gatherer frees it for good.
            dtype = self.dtype if self.mixed and slot.param.is_floating_point() else slot.param.dtype
            one = torch.empty((1,) * len(slot.shape), dtype=dtype, device=slot.param.device)
            slot.param.data = one.expand(slot.shape)
        return shard

    def _shard_slice(self):
        begin, end = self.layout.shard_range()
        return slice(begin, end)

    def _place_parameters(self, values):
        """values: rank 0's flat buffer in float32 (stages 0-2), or this rank's shard of it (stage 3)."""
        if self.stage < 3:
            # The parameters become views of one flat buffer, which the step's all-gather refreshes:
            # in float32, the broadcast buffer itself.
            self.flat_params = values.to(self.dtype) if self.mixed else values
            for slot in self.layout.slots:
                slot.param.data = self.flat_params[slot.offset:slot.offset + slot.numel].view(slot.shape)
            self.param_shard = self.flat_params[self._shard_slice()]
        else:
            self.flat_params = None
            self.param_shard = values.to(self.dtype).clone()
            if self.param_offload:
                self.param_shard = self.param_shard.cpu()
                if self.device.type == "cuda":
                    self.param_shard = self.param_shard.pin_memory()

    def _master(self, values):
        """The float32 values the optimizer updates and, with mixed precision, the low-precision copy
        it writes: stage 0 updates everything, the other stages their shard. With parameter offload
        the master stays beside the optimizer's state, and each step copies it into the host shard."""
        if self.stage == 0:
            return (values, self.flat_params) if self.mixed else (self.flat_params, None)
        if not self.param_offload and not self.mixed:
            return self.param_shard, None
        # Stage 3's values are the shard already, a buffer of its own that nothing else keeps.
        shard = values if self.stage == 3 else values[self._shard_slice()].clone()
        return shard, (self.param_shard if self.mixed and not self.param_offload else None)

    def _host_master(self, master):
        """ZeRO-Offload's master in pinned host memory; in float32 with parameter offload, the host
        parameter shard itself, which the host step then updates in place."""
        if self.param_offload and not self.mixed:
            return self.param_shard
        host = master.detach().float().cpu()
        return host.pin_memory() if self.device.type == "cuda" else host.clone()

    def _place_gradients(self):
        if self.stage < 2:
            self.flat_grads = torch.zeros(self.layout.padded, dtype=self.dtype, device=self.device)
            self.grad_shard = self.flat_grads[self._shard_slice()]
            self._attach_gradient_views()
            self.reducer = None
        else:
            self.flat_grads = None
            self.grad_shard = torch.zeros(self.layout.partition.shard, dtype=self.dtype, device=self.device)
            self.reducer = BucketReducer(self.layout, self.group, self.backend, self.grad_shard,
                                         self.zero_config.reduce_bucket_size, self.zero_config.overlap_comm,
                                         self.zero_config.reduce_scatter)

    def _attach_gradient_views(self):
        """Stages 0-1: each .grad is a view of the flat gradient buffer, into which autograd
        accumulates in place (DeepSpeed's contiguous_gradients)."""
        for slot in self.layout.slots:
            view = self.flat_grads[slot.offset:slot.offset + slot.numel].view(slot.shape)
            grad = slot.param.grad
            if grad is None or grad.data_ptr() != view.data_ptr():
                if grad is not None:
                    view.copy_(grad)
                slot.param.grad = view

    def _register_gradient_hooks(self):
        # A hook on each parameter's AccumulateGrad node runs once autograd has summed all of the
        # parameter's gradient for this backward. The nodes are made here, while the parameters
        # still have their full shapes, and kept alive so that autograd reuses them.
        self._accumulators = []
        for slot in self.layout.slots:
            accumulator = slot.param.expand_as(slot.param).grad_fn.next_functions[0][0]
            accumulator.register_hook(self._gradient_hook(slot))
            self._accumulators.append(accumulator)

    def _gradient_hook(self, slot):
        def hook(*unused):
            grad = slot.param.grad
            if grad is None:
                return
            slot.param.grad = None
            self.reducer.add_gradient(slot, grad)
            if self.stage == 3:
                self.gatherer.release_slot(slot)
        return hook

    # -- training ---------------------------------------------------------------------------------

    def _cast_inputs(self, value):
        if isinstance(value, torch.Tensor):
            return value.to(self.dtype) if value.is_floating_point() else value
        if isinstance(value, (list, tuple)):
            return type(value)(self._cast_inputs(v) for v in value)
        if isinstance(value, dict):
            return {k: self._cast_inputs(v) for k, v in value.items()}
        return value

    def forward(self, *args, **kwargs):
        """The model's forward. With bf16/fp16, floating-point inputs are cast to the model's dtype."""
        if self.mixed:
            args, kwargs = self._cast_inputs(args), self._cast_inputs(kwargs)
        if self.stage == 3:
            self.gatherer.start_forward()
        try:
            return self.module(*args, **kwargs)
        finally:
            if self.stage == 3:
                self.gatherer.end_forward()

    __call__ = forward

    def backward(self, loss):
        """loss.backward(), scaled for gradient accumulation (and fp16 loss scaling); stages 2-3
        reduce the gradients into the shards while it runs."""
        if self.reducer is not None:
            prefetch = None
            if self.offload is not None and self.micro_steps % self.gas == self.gas - 1:
                # The last micro-step: the reduced gradient comes down bucket by bucket (offload.py).
                self.offload.begin_prefetch()
                prefetch = self.offload.prefetch
            self.reducer.start_micro_step(accumulate=self.micro_steps % self.gas != 0, prefetch=prefetch)
        else:
            self._attach_gradient_views()
        scale = self.loss_scaler.scale / self.gas
        (loss * scale if scale != 1.0 else loss).backward()
        if self.reducer is not None:
            self.reducer.finish_micro_step()
        if self.stage == 3:
            self.gatherer.release_all()
        self.micro_steps += 1
        return loss

    def is_gradient_accumulation_boundary(self):
        return self.micro_steps > 0 and self.micro_steps % self.gas == 0

    def step(self):
        """At the end of each gradient-accumulation window: reduces the gradients, clips them,
        updates this rank's shard and gathers the parameters; then clears the gradients. Between
        boundaries it does nothing (call it after every backward, as with DeepSpeed)."""
        if not self.is_gradient_accumulation_boundary() or self.micro_steps == self._last_step_at:
            return
        self._last_step_at = self.micro_steps
        self._reduce_gradients()
        grad = self.grad_shard if self.stage > 0 else self.flat_grads
        grad_scale, skip = self._gradient_scale(grad)
        if skip:
            self.skipped_steps += 1
        else:
            (self.offload if self.offload is not None else self.optimizer).apply(grad, grad_scale)
            if self.param_offload and self.offload is None:
                self.param_shard.copy_(self.optimizer.master)
            self._publish_parameters()
        self._clear_gradients()
        if self.lr_scheduler is not None and not skip:
            self.lr_scheduler.step()
        self.global_steps += 1
        self._report_progress()

    def _report_progress(self):
        """With steps_per_print in the config, rank 0 prints a line every that many steps."""
        every = self.config.steps_per_print
        if not every or self.global_steps % every != 0:
            return
        now = time.perf_counter()
        since, self._last_report = self._last_report, now
        if self.rank != 0:
            return
        pace = f", {(now - since) / every * 1e3:.1f} ms/step" if since is not None else ""
        scale = f", loss scale {self.loss_scaler.scale:g}" if self.loss_scaler.enabled else ""
        print(f"torch_collective.zero: step {self.global_steps}, skipped {self.skipped_steps}, "
              f"lr {self.get_lr()}{scale}{pace}", flush=True)

    def _reduce_gradients(self):
        if self.stage == 0:
            dist.all_reduce(self.flat_grads, op=dist.ReduceOp.AVG, group=self.group)
        elif self.stage == 1:
            if self.zero_config.reduce_scatter:
                # In place: each rank's reduced shard lands in its own slice of the flat buffer.
                _C.zero_reduce_scatter_gradients(self.backend, self.flat_grads, self.grad_shard,
                                                 self.zero_config.reduce_bucket_size, False, True,
                                                 self.layout.partition).wait()
            else:
                dist.all_reduce(self.flat_grads, op=dist.ReduceOp.AVG, group=self.group)

    def _gradient_scale(self, grad):
        """(what to multiply the gradients by, whether to skip the step): the inverse loss scale
        times torch.nn.utils.clip_grad_norm_'s coefficient, from the global gradient norm."""
        scale = 1.0 / self.loss_scaler.scale
        clipping = self.config.gradient_clipping
        if clipping <= 0 and not self.loss_scaler.enabled:
            return scale, False
        sum_of_squares, non_finite = _C.zero_squared_norm(grad)
        if self.stage > 0:
            totals = torch.tensor([sum_of_squares, float(non_finite)], dtype=torch.float64)
            dist.all_reduce(totals, group=self.group)
            sum_of_squares, non_finite = float(totals[0]), bool(totals[1] > 0)
        if self.loss_scaler.enabled and self.loss_scaler.update(non_finite):
            return scale, True
        if clipping > 0:
            norm = (sum_of_squares ** 0.5) * scale
            coefficient = clipping / (norm + 1e-6)
            if coefficient < 1.0:
                scale *= coefficient
        return scale, False

    def parameters_from_master(self):
        """The model's parameter shard from the float32 master (after a checkpoint is loaded)."""
        if self.offload is not None:
            self.offload.upload_all()
        elif self.param_offload:
            self.param_shard.copy_(self.optimizer.master)
        elif self.mixed:
            self.optimizer.param_out.copy_(self.optimizer.master)

    def _publish_parameters(self):
        if self.stage in (1, 2):
            _C.zero_all_gather_parameters(self.backend, self.param_shard, self.flat_params,
                                          self.zero_config.allgather_bucket_size, self.layout.partition).wait()
        elif self.stage == 3:
            self.gatherer.refresh_persistent()

    def _clear_gradients(self):
        if self.flat_grads is not None:
            self.flat_grads.zero_()
        else:
            self.grad_shard.zero_()

    def zero_grad(self):
        """Gradients are cleared by step(); this clears a window that is abandoned half way."""
        self._clear_gradients()

    # -- DeepSpeed's accessors --------------------------------------------------------------------

    def train(self, mode=True):
        self.module.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def parameters(self, recurse=True):
        return self.module.parameters(recurse)

    def named_parameters(self, *args, **kwargs):
        return self.module.named_parameters(*args, **kwargs)

    @property
    def local_rank(self):
        return self.rank

    def train_batch_size(self):
        return self.config.train_batch_size

    def train_micro_batch_size_per_gpu(self):
        return self.config.train_micro_batch_size_per_gpu

    def gradient_accumulation_steps(self):
        return self.gas

    def get_lr(self):
        return [group["lr"] for group in self.optimizer.param_groups]

    def zero_optimization_stage(self):
        return self.stage

    def full_parameters(self):
        """Every parameter's full float32 values by name (stage 3 gathers them): for checks and export."""
        if self.stage == 3:
            self.gatherer.gather_slots(self.layout.slots)
        result = {slot.name: slot.param.detach().float().clone() for slot in self.layout.slots}
        if self.stage == 3:
            self.gatherer.release_all()
        return result

    def memory_breakdown(self):
        """Bytes this rank holds for the model states: "params" (the model's parameters, in its
        dtype), "grads" (gradients) and "optimizer_states" (Adam's moments or SGD's momentum, plus
        the float32 master copy with bf16/fp16), to check against the ZeRO paper's formulas."""
        if self.stage < 3:
            params = self.flat_params.numel() * self.flat_params.element_size()
        else:
            params = self.param_shard.numel() * self.param_shard.element_size() + self.gatherer.live_bytes()
        if self.flat_grads is not None:
            grads = self.flat_grads.numel() * self.flat_grads.element_size()
        else:
            grads = self.grad_shard.numel() * self.grad_shard.element_size() + self.reducer.live_bytes()
        states = self.optimizer.state_bytes()
        master = self.optimizer.master.data_ptr()
        if master != self.param_shard.data_ptr() and (self.flat_params is None or master != self.flat_params.data_ptr()):
            states += self.optimizer.master.numel() * 4
        return {"params": params, "grads": grads, "optimizer_states": states}

    # -- checkpoints ------------------------------------------------------------------------------

    def save_checkpoint(self, save_dir, tag=None, client_state=None, save_latest=True):
        """Every rank writes its shard of the float32 parameters and optimizer state, rank 0 the
        metadata (and `latest`). Returns the checkpoint's directory."""
        return checkpoint.save(self, save_dir, tag, client_state or {}, save_latest)

    def load_checkpoint(self, load_dir, tag=None, load_optimizer_states=True, load_lr_scheduler_states=True):
        """Loads a checkpoint saved by any number of ranks (it is resharded for this one); returns
        (path, client_state), or (None, None) when load_dir has no `latest` and no tag is given."""
        return checkpoint.load(self, load_dir, tag, load_optimizer_states, load_lr_scheduler_states)
