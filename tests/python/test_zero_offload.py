"""ZeRO-Offload's pipeline (torch_collective/zero/offload.py) where there is no GPU: with the
"device" parameters on the CPU every copy is immediate, so what is left to check is the pipeline's
logic. Over several steps, stepping the shard chunk by chunk through two slots gives the bits of
one whole step (master, optimizer state and the model's copy, float32 and bfloat16 models, chunks
of 1, 7, 500 and more than the shard); and the copies come in the order that lets them overlap the
host's arithmetic: chunk i+1's gradient is fetched before chunk i is stepped, each chunk is
uploaded right after its step, and a slot is reused only after the chunk that held it is done.
With the parameters in host memory too (stage 3's parameter offload) the step writes them in
place: the same bits, and nothing uploaded. A gradient prefetched bucket by bucket during backward
(in any order) gives the same bits with no fetch at the step, each prefetch after its bucket's
work; one not wholly prefetched, also after a step whose prefetch was never applied, is fetched at
the step.
On a GPU, tools/gpu_torch_check.py runs the engine with offload on CUDA.
"""
import sys

import torch

from common import Checker
from torch_collective.zero.config import optimizer_from_torch
from torch_collective.zero.offload import OptimizerOffload
from torch_collective.zero.optimizer import ZeroOptimizer

COUNT = 1037


def new_optimizer(kind, dtype):
    """A ZeroOptimizer over a shard of COUNT elements, and the model's copy of it (dtype)."""
    torch.manual_seed(3)
    master = torch.randn(COUNT)
    param = torch.nn.Parameter(master.clone())
    if kind == "adam":
        torch_optimizer = torch.optim.Adam([param], lr=1e-2, weight_decay=0.01)
    elif kind == "adamw":
        torch_optimizer = torch.optim.AdamW([param], lr=1e-2, weight_decay=0.05)
    else:
        torch_optimizer = torch.optim.SGD([param], lr=0.1, momentum=0.9, nesterov=True)
    model_copy = master.to(dtype)
    param_out = model_copy if dtype != torch.float32 else None
    return ZeroOptimizer([param], optimizer_from_torch(torch_optimizer), master, param_out), model_copy


def gradient(step):
    index = torch.arange(COUNT, dtype=torch.float64)
    return (((index * 37 + step * 101) % 199 - 99) / 99.0 * 0.02).to(torch.float32)


def bits(tensor):
    return tensor.contiguous().view(torch.int16 if tensor.element_size() == 2 else torch.int32)


def check_results(check):
    for kind in ("adam", "adamw", "sgd"):
        for dtype in (torch.float32, torch.bfloat16):
            for chunk, on_host in ((1, False), (7, False), (500, False), (COUNT + 5, False), (7, True), (500, True)):
                whole, whole_copy = new_optimizer(kind, dtype)
                chunked, device_params = new_optimizer(kind, dtype)
                chunked.param_out = None  # offloaded: the pipeline writes the model's copy
                if on_host and dtype == torch.float32:
                    device_params = chunked.master  # the host shard is the master itself
                offload = OptimizerOffload(chunked, device_params, "cpu", params_on_host=on_host, chunk_elements=chunk)
                for step in range(1, 4):
                    grad = gradient(step).to(dtype)
                    whole.apply(grad, 0.5)
                    offload.apply(grad, 0.5)
                what = f"{kind}, {dtype}, chunks of {chunk}" + (", parameters on the host" if on_host else "")
                check.true(torch.equal(bits(chunked.master), bits(whole.master)), f"{what}: master differs")
                for name, tensor in chunked.state_tensors().items():
                    check.true(torch.equal(bits(tensor), bits(whole.state_tensors()[name])), f"{what}: {name} differs")
                expected = whole_copy if dtype != torch.float32 else whole.master
                check.true(torch.equal(bits(device_params), bits(expected)), f"{what}: the model's copy differs")
                check.true(not torch.equal(whole.master, new_optimizer(kind, dtype)[0].master),
                           f"{what}: the steps changed nothing")


def check_order(check):
    optimizer, device_params = new_optimizer("adamw", torch.bfloat16)
    optimizer.param_out = None
    trace = []
    OptimizerOffload(optimizer, device_params, "cpu", chunk_elements=300, trace=trace).apply(gradient(1), 1.0)
    chunks = (COUNT + 299) // 300
    at = {event: position for position, event in enumerate(trace)}
    check.true(len(trace) == 3 * chunks and len(at) == len(trace), f"each chunk fetched, stepped, uploaded once: {trace}")
    for i in range(chunks):
        check.true(at[("fetch", i)] < at[("step", i)] < at[("upload", i)], f"chunk {i} out of order: {trace}")
        if i + 1 < chunks:
            check.true(at[("fetch", i + 1)] < at[("step", i)], f"chunk {i + 1} not fetched ahead of step {i}: {trace}")
        if i + 2 < chunks:
            # Slot i % 2 is chunk i+2's: chunk i must be done with it first.
            check.true(at[("upload", i)] < at[("fetch", i + 2)], f"slot of chunk {i} reused early: {trace}")


def check_order_parameters_on_host(check):
    optimizer, host_params = new_optimizer("adamw", torch.bfloat16)
    optimizer.param_out = None
    trace = []
    OptimizerOffload(optimizer, host_params, "cpu", params_on_host=True, chunk_elements=300,
                     trace=trace).apply(gradient(1), 1.0)
    chunks = (COUNT + 299) // 300
    at = {event: position for position, event in enumerate(trace)}
    check.true(len(trace) == 2 * chunks and all(what != "upload" for what, _ in trace),
               f"parameters on the host: each chunk fetched and stepped once, nothing uploaded: {trace}")
    for i in range(chunks - 1):
        check.true(at[("fetch", i + 1)] < at[("step", i)], f"chunk {i + 1} not fetched ahead of step {i}: {trace}")


class Work:
    """A bucket's call, recording when the prefetch waits for it."""

    def __init__(self, trace, lo):
        self.trace, self.lo = trace, lo

    def wait(self):
        self.trace.append(("work", self.lo))


def check_prefetch(check):
    whole, whole_copy = new_optimizer("adamw", torch.bfloat16)
    optimizer, device_params = new_optimizer("adamw", torch.bfloat16)
    optimizer.param_out = None
    trace = []
    offload = OptimizerOffload(optimizer, device_params, "cpu", chunk_elements=300, trace=trace)
    buckets = [(lo, min(lo + 128, COUNT)) for lo in range(0, COUNT, 128)]
    for step in range(1, 4):
        grad = gradient(step).to(torch.bfloat16)
        trace.clear()
        offload.begin_prefetch()
        for lo, hi in reversed(buckets):  # backward reaches the last buckets first
            offload.prefetch(Work(trace, lo), grad, lo, hi)
        offload.apply(grad, 0.5)
        whole.apply(grad, 0.5)
        kinds = [kind for kind, _ in trace]
        check.true("fetch" not in kinds and kinds.count("prefetch") == len(buckets),
                   f"step {step}: prefetched buckets, yet fetched at the step: {trace}")
        check.true(all(trace[i - 1] == ("work", lo) for i, (kind, lo) in enumerate(trace) if kind == "prefetch"),
                   f"step {step}: a prefetch before its bucket's work: {trace}")
    check.true(torch.equal(bits(optimizer.master), bits(whole.master)), "prefetched: master differs")
    check.true(torch.equal(bits(device_params), bits(whole_copy)), "prefetched: the model's copy differs")
    # Half the buckets, alone or after a step whose prefetch of the other half was never applied
    # (skipped): fetched at the step, not stepped from the two halves together.
    for skipped in (False, True):
        if skipped:
            offload.begin_prefetch()
            for lo, hi in buckets[1::2]:
                offload.prefetch(Work(trace, lo), gradient(8).to(torch.bfloat16), lo, hi)
        trace.clear()
        offload.begin_prefetch()
        for lo, hi in buckets[::2]:
            offload.prefetch(Work(trace, lo), gradient(9).to(torch.bfloat16), lo, hi)
        offload.apply(gradient(10).to(torch.bfloat16), 0.5)
        whole.apply(gradient(10).to(torch.bfloat16), 0.5)
        check.true(any(kind == "fetch" for kind, _ in trace),
                   f"half prefetched{' after a skipped step' if skipped else ''}: not fetched at the step: {trace}")
        check.true(torch.equal(bits(optimizer.master), bits(whole.master)),
                   f"half prefetched{' after a skipped step' if skipped else ''}: stepped with the prefetched gradient")


def main():
    check = Checker()
    check_results(check)
    check_order(check)
    check_order_parameters_on_host(check)
    check_prefetch(check)
    print(f"test_zero_offload: {check.passed} checks passed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
