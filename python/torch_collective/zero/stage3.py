"""Stage 3: parameters partitioned like everything else, gathered only while a module runs.

Each module's own parameters are one contiguous range of the flat buffer (layout.py). A forward
pre-hook gathers that range from the ranks that own it (collZeroAllGatherRange) into a fresh
buffer and points the parameters at it; the forward hook frees it again and wraps the module's
outputs in an autograd function whose backward gathers the range once more, just before autograd
reaches the module's own backward. A parameter is freed again as soon as its gradient has been
accumulated (the engine's gradient hook calls release_slot).

Parameters of at most stage3_param_persistence_threshold elements stay gathered for good (as
DeepSpeed's: small tensors cost more in latency than they save). With overlap_comm, the gathers of
the next modules in the order recorded on the first forward are started ahead, up to
stage3_prefetch_bucket_size elements, while at most stage3_max_live_parameters elements are
gathered at a time.

With parameter offload (offload_param.device: cpu) the shard lives in host memory: each gather
copies this rank's piece of the range up into the gathered buffer, on the stream the gather then
runs on, and gathers the other ranks' pieces around it (collZeroAllGatherRangeInPlace), so the
device holds only what is gathered.
"""
import torch

from .. import _C


class _GatherForBackward(torch.autograd.Function):
    """Identity on the module's outputs; its backward gathers the module's parameters."""

    @staticmethod
    def forward(ctx, gatherer, module, *tensors):
        ctx.gatherer = gatherer
        ctx.module = module
        outputs = tuple(t.view_as(t) for t in tensors)
        return outputs if len(outputs) > 1 else outputs[0]

    @staticmethod
    def backward(ctx, *grads):
        ctx.gatherer.gather(ctx.module)
        return (None, None) + grads


class ParameterGatherer:
    def __init__(self, layout, backend, shard, zero_config, device):
        self.layout = layout
        self.backend = backend
        self.shard = shard                      # this rank's shard, in the model's dtype
        self.device = device                    # where the gathered parameters live
        self.shard_elsewhere = zero_config.offload_param_device == "cpu"
        self.dtype = shard.dtype
        self.persistent = {id(s) for s in layout.slots if s.numel <= zero_config.stage3_param_persistence_threshold}
        self.max_live = zero_config.stage3_max_live_parameters
        self.prefetch_size = zero_config.stage3_prefetch_bucket_size if zero_config.overlap_comm else 0
        self.live = {}                          # id(slot) -> elements gathered
        self.inflight = {}                      # module -> [(work, buffer, begin, end)] started ahead
        self.trace = []                         # module order of the first forward
        self.tracing = True
        self.position = 0
        self.handles = []
        self.empty = torch.empty(0, dtype=self.dtype, device=device)

    # -- the parameters ---------------------------------------------------------------------------

    def _start(self, ranges):
        started = []
        for begin, end in ranges:
            buffer = torch.empty(end - begin, dtype=self.dtype, device=self.device)
            started.append((self._gather_into(buffer, begin, end), buffer, begin, end))
        return started

    def _gather_into(self, buffer, begin, end):
        partition = self.layout.partition
        if not self.shard_elsewhere:
            return _C.zero_all_gather_range(self.backend, self.shard, begin, buffer, partition)
        shard_begin, shard_end = self.layout.shard_range()
        lo, hi = max(begin, shard_begin), min(end, shard_end)
        if lo < hi:
            # From pinned memory, on the current stream, which the gather waits for.
            buffer[lo - begin:hi - begin].copy_(self.shard[lo - shard_begin:hi - shard_begin], non_blocking=True)
        return _C.zero_all_gather_range_in_place(self.backend, begin, buffer, partition)

    def _install(self, started, slots):
        for work, buffer, begin, end in started:
            work.wait()
            for slot in slots:
                if begin <= slot.offset and slot.offset + slot.numel <= end and id(slot) not in self.live:
                    first = slot.offset - begin
                    slot.param.data = buffer[first:first + slot.numel].view(slot.shape)
                    self.live[id(slot)] = slot.numel

    def _missing(self, slots):
        return [s for s in slots if id(s) not in self.live]

    def gather(self, module):
        """Gathers a module's own parameters: what was started ahead for it, then the rest."""
        slots = self.layout.module_ranges.get(module, [])
        started = self.inflight.pop(module, None)
        if started is not None:
            self._install(started, slots)
        self.gather_slots(slots)

    def gather_slots(self, slots):
        missing = self._missing(slots)
        if missing:
            self._install(self._start(self.layout.ranges_of(missing)), missing)

    def release_slot(self, slot):
        if id(slot) in self.live and id(slot) not in self.persistent:
            slot.param.data = self.empty
            del self.live[id(slot)]

    def release(self, module):
        for slot in self.layout.module_ranges.get(module, []):
            self.release_slot(slot)

    def _drop_inflight(self):
        """Waits for the gathers started ahead that no module took, and drops their buffers."""
        for module in list(self.inflight):
            for work, _, _, _ in self.inflight.pop(module):
                work.wait()

    def release_all(self):
        self._drop_inflight()
        for slot in self.layout.slots:
            self.release_slot(slot)

    def _gathered_elements(self):
        """Elements held gathered now: installed parameters and gathers started ahead."""
        inflight = sum(b.numel() for started in self.inflight.values() for _, b, _, _ in started)
        return sum(self.live.values()) + inflight

    def live_bytes(self):
        return self._gathered_elements() * self.empty.element_size()

    def partition_parameters(self):
        """Frees every parameter's full copy, except the persistent ones, which are gathered."""
        for slot in self.layout.slots:
            slot.param.data = self.empty
        self.live.clear()
        self.refresh_persistent()

    def refresh_persistent(self):
        """Gathers the persistent parameters anew (after a step changed their shards)."""
        slots = [s for s in self.layout.slots if id(s) in self.persistent]
        for slot in slots:
            self.live.pop(id(slot), None)
        if slots:
            self._install(self._start(self.layout.ranges_of(slots)), slots)

    # -- the hooks --------------------------------------------------------------------------------

    def register(self, root):
        for module in self.layout.module_ranges:
            self.handles.append(module.register_forward_pre_hook(self._before_forward))
            self.handles.append(module.register_forward_hook(self._after_forward))

    def start_forward(self):
        self.position = 0

    def end_forward(self):
        if self.tracing and self.trace:
            self.tracing = False
        self._drop_inflight()

    def _before_forward(self, module, inputs):
        if self.tracing:
            self.trace.append(module)
        self.gather(module)
        if not self.tracing and self.prefetch_size > 0:
            self._prefetch_after(module)

    def _prefetch_after(self, module):
        # Where this module is in the recorded order (the same on every rank).
        while self.position < len(self.trace) and self.trace[self.position] is not module:
            self.position += 1
        budget = self.prefetch_size
        live = self._gathered_elements()
        for upcoming in self.trace[self.position + 1:]:
            if upcoming in self.inflight:
                continue
            missing = self._missing(self.layout.module_ranges.get(upcoming, []))
            need = sum(s.numel for s in missing)
            if need == 0:
                continue
            if need > budget or live + need > self.max_live:
                break
            self.inflight[upcoming] = self._start(self.layout.ranges_of(missing))
            budget -= need
            live += need

    def _after_forward(self, module, inputs, output):
        self.release(module)
        if not torch.is_grad_enabled():
            return output
        if isinstance(output, torch.Tensor):
            return _GatherForBackward.apply(self, module, output) if output.requires_grad else output
        if isinstance(output, tuple) and all(isinstance(t, torch.Tensor) for t in output) and any(
                t.requires_grad for t in output):
            wrapped = _GatherForBackward.apply(self, module, *output)
            return wrapped if isinstance(wrapped, tuple) else (wrapped,)
        return output
