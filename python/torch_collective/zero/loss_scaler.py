"""fp16 loss scaling, as DeepSpeed's: a static scale, or a dynamic one that halves on overflow
(after `hysteresis` overflows) and doubles after `loss_scale_window` clean steps."""


class LossScaler:
    def __init__(self, fp16):
        self.enabled = fp16.enabled
        self.dynamic = fp16.enabled and fp16.loss_scale == 0
        self.scale = (2.0 ** fp16.initial_scale_power if self.dynamic else fp16.loss_scale) if fp16.enabled else 1.0
        self.window = fp16.loss_scale_window
        self.hysteresis = fp16.hysteresis
        self.min_scale = fp16.min_loss_scale
        self.clean_steps = 0
        self.overflows_left = self.hysteresis

    def update(self, overflow):
        """Records a step's outcome; True when the step must be skipped."""
        if not self.dynamic:
            return overflow
        if overflow:
            self.clean_steps = 0
            self.overflows_left -= 1
            if self.overflows_left <= 0:
                self.scale = max(self.scale / 2.0, self.min_scale)
                self.overflows_left = self.hysteresis
            return True
        self.clean_steps += 1
        if self.clean_steps % self.window == 0:
            self.scale *= 2.0
            self.overflows_left = self.hysteresis
        return False

    def state_dict(self):
        return {"scale": self.scale, "clean_steps": self.clean_steps, "overflows_left": self.overflows_left}

    def load_state_dict(self, state):
        self.scale = float(state["scale"])
        self.clean_steps = int(state["clean_steps"])
        self.overflows_left = int(state["overflows_left"])
