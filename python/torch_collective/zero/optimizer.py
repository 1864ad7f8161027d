"""The optimizer of a ZeRO engine: state for this rank's shard only, updated by libcollective's
collZeroOptimizerStep (Adam, AdamW, SGD with momentum), with torch.optim's arithmetic.

It is a torch.optim.Optimizer so that learning-rate schedulers work on it (they change
param_groups[0]["lr"], which every step reads), but the engine drives it: engine.step() reduces
the gradients, then calls apply().
"""
import torch

from .. import _C


class ZeroOptimizer(torch.optim.Optimizer):
    def __init__(self, params, config, master, param_out):
        """master: the float32 values this rank updates (its shard, or everything in stage 0);
        param_out: the low-precision copy of them the model uses (mixed precision), else None."""
        defaults = dict(lr=config.lr, betas=config.betas, eps=config.eps, weight_decay=config.weight_decay,
                        momentum=config.momentum, dampening=config.dampening, nesterov=config.nesterov)
        super().__init__(list(params), defaults)
        self.kind = config.kind
        self.master = master
        self.param_out = param_out
        count = master.numel()
        adam = self.kind != "sgd"
        self.state0 = torch.zeros(count, dtype=torch.float32, device=master.device) if adam or config.momentum != 0 \
            else None
        self.state1 = torch.zeros(count, dtype=torch.float32, device=master.device) if adam else None
        self.step_count = 0

    def apply(self, grad, grad_scale):
        """One update of master (and param_out) from grad, scaled by grad_scale first."""
        self.apply_pieces([(0, self.master.numel(), grad, self.param_out)], grad_scale)

    def apply_pieces(self, pieces, grad_scale):
        """One update, piece by piece: (lo, hi, grad, param_out) updates master[lo:hi] and its state
        from grad (hi - lo elements), writing param_out when it is given (ZeRO-Offload's chunks)."""
        group = self.param_groups[0]
        self.step_count += 1
        beta1, beta2 = group["betas"]
        settings = dict(lr=float(group["lr"]), beta1=float(beta1), beta2=float(beta2), eps=float(group["eps"]),
                        weight_decay=float(group["weight_decay"]), momentum=float(group["momentum"]),
                        dampening=float(group["dampening"]), nesterov=bool(group["nesterov"]),
                        step=self.step_count, grad_scale=float(grad_scale))
        for lo, hi, grad, param_out in pieces:
            state0 = self.state0[lo:hi] if self.state0 is not None else None
            state1 = self.state1[lo:hi] if self.state1 is not None else None
            _C.zero_optimizer_step(self.kind, self.master[lo:hi], grad, state0, state1, param_out, **settings)

    def step(self, closure=None):
        raise RuntimeError("torch_collective.zero: call engine.step(), which reduces the gradients before it "
                           "updates the parameters")

    def zero_grad(self, set_to_none=False):
        """The engine clears gradients itself after each step (as DeepSpeed's engine.step does)."""

    def state_tensors(self):
        """The state tensors by name, for checkpoints and memory accounting."""
        return {name: t for name, t in (("state0", self.state0), ("state1", self.state1)) if t is not None}

    def state_bytes(self):
        return sum(t.numel() * t.element_size() for t in self.state_tensors().values())
