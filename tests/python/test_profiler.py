"""torch.profiler sees the backend's calls, as it sees gloo's.

    collrun -n 2 PYTHON tests/python/test_profiler.py      (and -n 3)

A DDP step, then a send and a recv, run under torch.profiler on the "collective" group and on a
gloo group; the trace must hold one "collective:<operation>" event per call, with its tensors'
shapes, wherever gloo's trace holds the "gloo:<operation>" event, with the same shapes. Read both
from prof.key_averages() and from the exported Chrome trace.
"""
import json
import os
import tempfile

import torch
import torch.distributed as dist
from torch.profiler import ProfilerActivity, profile

from gloo_parity import run_against_gloo

# A model whose gradients make one DDP bucket of 10*5 + 5 + 5*3 + 3 = 73 elements.
BUCKET_ELEMENTS = 73


def profiled_step(group, rank, ranks):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(10, 5), torch.nn.ReLU(), torch.nn.Linear(5, 3))
    ddp = torch.nn.parallel.DistributedDataParallel(model, process_group=group or dist.group.WORLD)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        ddp(torch.randn(4, 10) + rank).sum().backward()
        peer_tensor = torch.full((6,), float(rank))
        if rank == 0:
            dist.send(peer_tensor, dst=1, group=group)
        elif rank == 1:
            dist.recv(peer_tensor, src=0, group=group)
        dist.barrier(group=group)
    return prof


def events_of(prof, backend):
    """{operation: sorted list of input shapes} of the backend's events, from key_averages()."""
    found = {}
    for event in prof.key_averages(group_by_input_shape=True):
        if event.key.startswith(backend + ":"):
            found.setdefault(event.key.split(":", 1)[1], []).extend([str(event.input_shapes)] * event.count)
    return {op: sorted(shapes) for op, shapes in found.items()}


def trace_events_of(prof, backend):
    """The same from the exported Chrome trace: {operation: sorted list of "Input Dims"}."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as file:
            trace = json.load(file)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    found = {}
    for event in events:
        name = event.get("name", "")
        if name.startswith(backend + ":") and event.get("ph") == "X":
            dims = event.get("args", {}).get("Input Dims")
            found.setdefault(name.split(":", 1)[1], []).append(str(dims))
    return {op: sorted(dims) for op, dims in found.items()}


def test_ddp_trace(check, twin, rank, ranks):
    ours = profiled_step(None, rank, ranks)
    gloo = profiled_step(twin.group, rank, ranks)
    our_events, gloo_events = events_of(ours, "collective"), events_of(gloo, "gloo")
    check.true("all_reduce" in our_events, f"an all_reduce event in the trace: {our_events}")
    check.true(str([[BUCKET_ELEMENTS]]) in our_events["all_reduce"],
               f"the DDP bucket's all_reduce with its size [{BUCKET_ELEMENTS}]: {our_events['all_reduce']}")
    # Every event gloo records, we record with the same shapes.
    for op, shapes in gloo_events.items():
        check.true(our_events.get(op) == shapes, f"{op}: ours {our_events.get(op)}, gloo's {shapes}")
    if rank in (0, 1):
        check.true(("send" if rank == 0 else "recv") in our_events, f"a send/recv event: {our_events}")
    our_trace, gloo_trace = trace_events_of(ours, "collective"), trace_events_of(gloo, "gloo")
    check.true("all_reduce" in our_trace, f"the Chrome trace's all_reduce: {our_trace}")
    # torch 1.13 as Debian builds it (no Kineto) writes no shapes into the Chrome trace, for
    # gloo's events as for ours; where gloo's have them, ours must.
    if gloo_trace.get("all_reduce", ["None"]) != ["None"] * len(gloo_trace.get("all_reduce", [])):
        check.true(str([[BUCKET_ELEMENTS]]) in our_trace["all_reduce"],
                   f"the Chrome trace's all_reduce with its size: {our_trace}")
    for op, dims in gloo_trace.items():
        check.true(our_trace.get(op) == dims, f"trace {op}: ours {our_trace.get(op)}, gloo's {dims}")


def main():
    run_against_gloo("test_profiler", [test_ddp_trace])


if __name__ == "__main__":
    main()
