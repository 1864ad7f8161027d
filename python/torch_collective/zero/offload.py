"""ZeRO-Offload (zero_optimization.offload_optimizer.device: cpu) for a model on a GPU: the fp32
master weights and the optimizer state of this rank's shard live in host memory, and the step runs
there, in libcollective's vectorized host loops.

In stages 2 and 3 the gradient comes down during backward: as each bucket's reduction is issued
in the last micro-step of a step, the part of it this rank owns is copied into a pinned host
buffer on a copy stream, behind that bucket's call (prefetch), so the copy overlaps the next
buckets' communication and backward's compute. The step then reads the gradient from host memory
and sends the updated parameters back in chunks, chunk i-1's going up while the host steps chunk
i. Where the gradient did not all come down that way (stage 1, whose reduction runs at the step),
each step fetches it in chunks beside the arithmetic instead: while the host steps chunk i, the
gradient of chunk i+1 is on its way down (into one of two pinned slots). A fetch reaches the copy
stream only after the work the caller's stream has queued (its reduce-scatter); the caller's
stream waits for the last upload before anything that reads the parameters (the all-gather).

With parameter offload (stage 3) the parameter shard is host memory too: the step writes it
directly (in float32 it is the master itself) and nothing goes up.

On the CPU (device "cpu") every copy is immediate, which is how the order and the results are
tested where there is no GPU (tests/python/test_zero_offload.py).
"""
import torch


class OptimizerOffload:
    def __init__(self, optimizer, device_params, device, params_on_host=False, chunk_elements=1 << 20, trace=None):
        """optimizer: a ZeroOptimizer whose master and state are host tensors (this rank's shard);
        device_params: the shard of the model's parameters (its dtype), which each step overwrites
        with the updated master: on `device`, or in host memory with params_on_host (parameter
        offload); trace: a list to record the pipeline's events in ("fetch", i), ("step", i),
        ("upload", i), for tests."""
        self.optimizer = optimizer
        self.device_params = device_params
        self.params_on_host = params_on_host
        self.count = optimizer.master.numel()
        self.chunk = max(1, min(int(chunk_elements), max(self.count, 1)))
        self.trace = trace
        self.device = torch.device(device)
        self.on_gpu = self.device.type == "cuda"
        pin = self.on_gpu
        low_precision = device_params.dtype != torch.float32
        # Two slots each: chunk i+1 arrives in one while the host steps chunk i from the other.
        self.grad_slots = None          # made at the first step, in the gradient's dtype
        self.param_slots = [torch.empty(self.chunk, dtype=device_params.dtype, pin_memory=pin) for _ in range(2)] \
            if low_precision and not params_on_host else None
        self.copy_stream = torch.cuda.Stream(device=self.device) if self.on_gpu else None
        self.host_grad = None           # the prefetched gradient shard (pinned), made at the first prefetch
        self.prefetched = 0             # its elements copied this step

    def begin_prefetch(self):
        """The next micro-step is the last of a step: its buckets' gradients come down as they are
        reduced. What came down for a step that did not run (skipped for overflow) is dropped."""
        self.prefetched = 0

    def prefetch(self, work, grad_shard, lo, hi):
        """Copies grad_shard[lo:hi] (this rank's part of a bucket whose reduction `work` carries, or
        with work None what the caller's stream has queued) into host memory, behind that work.
        Waiting for a CUDA call's Work blocks the host only until the call is enqueued; the copy
        stream waits for the call on the device."""
        if hi <= lo:
            return
        if self.host_grad is None or self.host_grad.dtype != grad_shard.dtype:
            self.host_grad = torch.empty(self.count, dtype=grad_shard.dtype, pin_memory=self.on_gpu)
        if self.on_gpu:
            caller = torch.cuda.current_stream(self.device)  # read before the copy stream is made current
            with torch.cuda.stream(self.copy_stream):
                if work is not None:
                    work.wait()  # makes the then current stream, the copy stream, wait for the call
                else:
                    self.copy_stream.wait_stream(caller)
                self.host_grad[lo:hi].copy_(grad_shard[lo:hi], non_blocking=True)
        else:
            if work is not None:
                work.wait()
            self.host_grad[lo:hi].copy_(grad_shard[lo:hi])
        self.prefetched += hi - lo
        self._record("prefetch", lo)

    def _event(self):
        if not self.on_gpu:
            return None
        event = torch.cuda.Event()
        event.record(self.copy_stream)
        return event

    def _record(self, what, index):
        if self.trace is not None:
            self.trace.append((what, index))

    def _fetch(self, grad, index, lo, hi):
        slot = self.grad_slots[index % 2][:hi - lo]
        if self.on_gpu:
            with torch.cuda.stream(self.copy_stream):
                slot.copy_(grad[lo:hi], non_blocking=True)
        else:
            slot.copy_(grad[lo:hi])
        self._record("fetch", index)
        return slot, self._event()

    def _upload(self, index, lo, hi):
        source = self.param_slots[index % 2][:hi - lo] if self.param_slots is not None else \
            self.optimizer.master[lo:hi]
        if self.on_gpu:
            with torch.cuda.stream(self.copy_stream):
                self.device_params[lo:hi].copy_(source, non_blocking=True)
        else:
            self.device_params[lo:hi].copy_(source)
        self._record("upload", index)
        return self._event()

    def _pieces(self, grad):
        """The optimizer's (lo, hi, grad on the host, low-precision output on the host) pieces, with
        the copies around each one issued as the pipeline needs them."""
        chunks = [(lo, min(lo + self.chunk, self.count)) for lo in range(0, self.count, self.chunk)]
        if not chunks:
            return
        # Every element came down during backward: the step reads them where they are.
        prefetched = self.prefetched == self.count and self.host_grad is not None \
            and self.host_grad.dtype == grad.dtype
        self.prefetched = 0
        if self.on_gpu:
            # The fetches, the uploads and the host's writes into host parameters come after what the
            # caller's stream has queued before the step (its reduce-scatter; the prefetches are
            # ordered only after their buckets' calls).
            self.copy_stream.wait_stream(torch.cuda.current_stream(self.device))
        if prefetched:
            if self.on_gpu:
                self._event().synchronize()  # the prefetches, and what the caller's stream queued
        else:
            if self.grad_slots is None or self.grad_slots[0].dtype != grad.dtype:
                self.grad_slots = [torch.empty(self.chunk, dtype=grad.dtype, pin_memory=self.on_gpu) for _ in range(2)]
            fetched = [self._fetch(grad, 0, *chunks[0])]
        uploaded = []
        for i, (lo, hi) in enumerate(chunks):
            if prefetched:
                slot, arrived = self.host_grad[lo:hi], None
            else:
                if i + 1 < len(chunks):
                    fetched.append(self._fetch(grad, i + 1, *chunks[i + 1]))
                slot, arrived = fetched[i]
            if arrived is not None:
                arrived.synchronize()
            # The parameter slot this chunk writes was chunk i-2's, whose upload must be done.
            if i >= 2 and uploaded[i - 2] is not None:
                uploaded[i - 2].synchronize()
            self._record("step", i)
            if self.params_on_host:
                yield lo, hi, slot, self._host_output(lo, hi)
                uploaded.append(None)
                continue
            out = self.param_slots[i % 2][:hi - lo] if self.param_slots is not None else None
            yield lo, hi, slot, out
            uploaded.append(self._upload(i, lo, hi))

    def _host_output(self, lo, hi):
        """Where the step writes the host parameters: the shard's chunk, or nothing when the shard
        is the master (float32)."""
        if self.device_params.data_ptr() == self.optimizer.master.data_ptr():
            return None
        return self.device_params[lo:hi]

    def apply(self, grad, grad_scale):
        """One step of the shard from `grad` (the reduced gradient of the shard, on the device),
        read from host memory where the whole of it was prefetched during this step's backward."""
        self.optimizer.apply_pieces(self._pieces(grad), grad_scale)
        if self.on_gpu:
            torch.cuda.current_stream(self.device).wait_stream(self.copy_stream)
            # The host may change master and the slots again only once every upload has read them.
            self.copy_stream.synchronize()

    def upload_all(self):
        """The parameters from the host master (after a checkpoint is loaded)."""
        if self.device_params.data_ptr() != self.optimizer.master.data_ptr():
            self.device_params.copy_(self.optimizer.master.to(self.device_params.dtype))
