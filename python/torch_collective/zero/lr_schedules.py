"""The learning-rate schedules a DeepSpeed config names in its "scheduler" entry.

DeepSpeed's configs commonly carry {"scheduler": {"type": "WarmupLR" | "WarmupDecayLR", "params":
{...}}}; the engine builds the schedule when the program passes none, so the same config trains
the same way here as under DeepSpeed. Same rule as DeepSpeed's: the learning rate starts at
warmup_min_lr, rises to warmup_max_lr over warmup_num_steps steps (logarithmically by default,
or linearly), then stays there (WarmupLR) or falls linearly to 0 at total_num_steps
(WarmupDecayLR). The engine steps the schedule after each optimizer step.
"""
import math

SCHEDULES = ("WarmupLR", "WarmupDecayLR")


class WarmupSchedule:
    """Sets param_groups[i]["lr"] of `optimizer` for each step; step() moves to the next one."""

    def __init__(self, optimizer, warmup_min_lr=0.0, warmup_max_lr=0.001, warmup_num_steps=1000,
                 warmup_type="log", total_num_steps=None):
        self.optimizer = optimizer
        self.min_lr = float(warmup_min_lr)
        self.max_lr = float(warmup_max_lr)
        # A log ramp over fewer than 2 steps would divide by log(1) = 0.
        self.warmup_steps = max(2, int(warmup_num_steps))
        self.linear = warmup_type == "linear"
        self.total_steps = None if total_num_steps is None else int(total_num_steps)
        self.last_step = -1
        self._apply()

    def _ramp(self, step):
        """From 0 at step 0 to 1 at the end of the warm-up, then what follows it."""
        if step < 0:
            return 0.0
        if step < self.warmup_steps:
            return step / self.warmup_steps if self.linear else math.log(step + 1) / math.log(self.warmup_steps)
        if self.total_steps is None:
            return 1.0
        return max(0.0, (self.total_steps - step) / max(1.0, self.total_steps - self.warmup_steps))

    def get_lr(self):
        return [self.min_lr + (self.max_lr - self.min_lr) * self._ramp(self.last_step)] * \
            len(self.optimizer.param_groups)

    def get_last_lr(self):
        return [group["lr"] for group in self.optimizer.param_groups]

    def _apply(self):
        for group, lr in zip(self.optimizer.param_groups, self.get_lr()):
            group["lr"] = lr

    def step(self, step=None):
        self.last_step = self.last_step + 1 if step is None else int(step)
        self._apply()

    def state_dict(self):
        return {"last_batch_iteration": self.last_step}

    def load_state_dict(self, state):
        self.last_step = int(state["last_batch_iteration"])
        self._apply()


def build(optimizer, scheduler_config):
    """The schedule of a parsed "scheduler" entry (config.SchedulerConfig), on `optimizer`."""
    params = dict(scheduler_config.params)
    if scheduler_config.kind == "WarmupLR":
        params.pop("total_num_steps", None)
    return WarmupSchedule(optimizer, **params)
