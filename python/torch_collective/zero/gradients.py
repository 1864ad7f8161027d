"""Gradient reduction of stages 2 and 3: buckets reduced into the owners' shards as backward
produces the gradients.

The flat buffer is cut into fixed buckets of reduce_bucket_size elements. When autograd has
accumulated a parameter's gradient, its elements are copied into the buckets they fall in and the
parameter's .grad is dropped, so a rank never holds the whole gradient. A bucket whose elements
have all arrived is handed to libcollective's collZeroReduceScatterRange on the group's worker
thread (with overlap_comm, backward goes on meanwhile); the buckets still open when backward ends
(unused parameters, padding) are sent in index order, so every rank issues every bucket once per
micro-step, in the same order.

On a GPU with overlap_comm, a bucket's call is issued on a stream of the reducer's own, after what
the compute stream has queued (the bucket's copies), so that backward's kernels go on while it is
reduced (a call runs on the stream current when it is made); waiting for the call's Work makes the
compute stream wait for it before the step reads the shard or a bucket's memory is let go.

With ZeRO-Offload, in the last micro-step of a step, each bucket's part of the shard is handed to
the offload's prefetch (offload.py) once the next bucket's call is issued (waiting for a call's
Work blocks the host until the worker thread has enqueued it, so the bucket just issued is left
for later), and the rest when backward ends: each comes down to host memory behind its call
while the next buckets are reduced.
"""
import contextlib

import torch
import torch.distributed as dist

from .. import _C


class BucketReducer:
    def __init__(self, layout, group, backend, grad_shard, bucket_size, overlap, use_reduce_scatter):
        self.layout = layout
        self.group = group
        self.backend = backend
        self.grad_shard = grad_shard
        self.dtype = grad_shard.dtype
        self.bucket_size = max(1, min(bucket_size, layout.padded))
        self.overlap = overlap
        self.use_reduce_scatter = use_reduce_scatter
        self.num_buckets = (layout.padded + self.bucket_size - 1) // self.bucket_size
        # Elements each bucket must receive from parameters before it is complete.
        self.expected = [0] * self.num_buckets
        for slot in layout.slots:
            for bucket, lo, hi in self._pieces(slot):
                self.expected[bucket] += hi - lo
        self.accumulate = False
        self.prefetch = None     # (work, grad_shard, lo, hi) -> None: where owned parts go once reduced
        device = grad_shard.device
        self.comm_stream = torch.cuda.Stream(device=device) if overlap and device.type == "cuda" else None
        self._reset()

    def _reset(self):
        self.to_prefetch = []    # (work, lo, hi) of issued buckets not yet handed to prefetch
        self.buffers = {}        # bucket -> tensor being filled
        self.remaining = list(self.expected)
        self.sent = [False] * self.num_buckets
        self.pending = []        # (work, buffer, finish) in flight

    def _pieces(self, slot):
        """(bucket, begin, end) flat pieces of a parameter, split at bucket boundaries."""
        begin, end = slot.offset, slot.offset + slot.numel
        while begin < end:
            bucket = begin // self.bucket_size
            stop = min(end, (bucket + 1) * self.bucket_size)
            yield bucket, begin, stop
            begin = stop

    def _buffer(self, bucket):
        buffer = self.buffers.get(bucket)
        if buffer is None:
            begin = bucket * self.bucket_size
            count = min(self.bucket_size, self.layout.padded - begin)
            buffer = torch.zeros(count, dtype=self.dtype, device=self.grad_shard.device)
            self.buffers[bucket] = buffer
        return buffer

    def start_micro_step(self, accumulate, prefetch=None):
        """accumulate: add this micro-step's reduced gradients to the shard (not the first of a step);
        prefetch: called with each bucket's part of the shard once its reduction is issued (or, for
        reduce_scatter off, done), in the last micro-step of a step with ZeRO-Offload."""
        self._reset()
        self.accumulate = accumulate
        self.prefetch = prefetch

    def add_gradient(self, slot, grad):
        flat = grad.reshape(-1)
        for bucket, lo, hi in self._pieces(slot):
            base = bucket * self.bucket_size
            self._buffer(bucket)[lo - base:hi - base].copy_(flat[lo - slot.offset:hi - slot.offset])
            self.remaining[bucket] -= hi - lo
            if self.remaining[bucket] == 0:
                self._send(bucket)

    def _on_comm_stream(self):
        if self.comm_stream is None:
            return contextlib.nullcontext()
        self.comm_stream.wait_stream(torch.cuda.current_stream(self.comm_stream.device))
        return torch.cuda.stream(self.comm_stream)

    def _send(self, bucket):
        with self._on_comm_stream():
            self._issue(bucket)
        if not self.overlap:
            self._wait_all()

    def _issue(self, bucket):
        buffer = self._buffer(bucket)
        begin = bucket * self.bucket_size
        self.sent[bucket] = True
        if self.use_reduce_scatter:
            work = _C.zero_reduce_scatter_range(self.backend, buffer, begin, self.grad_shard, self.accumulate, True,
                                                self.layout.partition)
            finish = None
            if self.prefetch is not None:
                self._prefetch_issued()
                self.to_prefetch.append((work, *self._owned_part(begin, buffer.numel())))
        else:
            # reduce_scatter: false, as DeepSpeed: an all-reduce of the bucket, of which each rank keeps its part.
            work = dist.all_reduce(buffer, op=dist.ReduceOp.AVG, group=self.group, async_op=True)
            finish = self._keep_owned_part(buffer, begin)
        self.pending.append((work, buffer, finish))
        del self.buffers[bucket]

    def _owned_part(self, begin, count):
        """The part of the flat range [begin, begin + count) in this rank's shard, as shard indices."""
        shard_begin, shard_end = self.layout.shard_range()
        lo, hi = max(begin, shard_begin), min(begin + count, shard_end)
        return (lo - shard_begin, hi - shard_begin) if lo < hi else (0, 0)

    def _keep_owned_part(self, buffer, begin):
        lo, hi = self._owned_part(begin, buffer.numel())
        offset = begin - self.layout.shard_range()[0]

        def finish():
            if lo < hi:
                target = self.grad_shard[lo:hi]
                piece = buffer[lo - offset:hi - offset]
                if self.accumulate:
                    target.add_(piece)
                else:
                    target.copy_(piece)
                if self.prefetch is not None:
                    self.prefetch(None, self.grad_shard, lo, hi)
        return finish

    def _prefetch_issued(self):
        """Hands the buckets issued so far to the prefetch, in order."""
        for work, lo, hi in self.to_prefetch:
            self.prefetch(work, self.grad_shard, lo, hi)
        self.to_prefetch = []

    def _wait_all(self):
        for work, _, finish in self.pending:
            work.wait()
            if finish is not None:
                finish()
        self.pending = []

    def finish_micro_step(self):
        """Sends the buckets backward left open, in index order, and waits for every bucket."""
        for bucket in range(self.num_buckets):
            if not self.sent[bucket]:
                self._send(bucket)
        self._prefetch_issued()
        self._wait_all()

    def live_bytes(self):
        held = list(self.buffers.values()) + [buffer for _, buffer, _ in self.pending]
        return sum(b.numel() * b.element_size() for b in held)
