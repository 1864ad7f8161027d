"""torch.profiler sees the backend's calls, as it sees gloo's.

    collrun -n 2 PYTHON tests/python/test_profiler.py      (and -n 3)

A DDP step, then a send and a recv, run under torch.profiler on the "collective" group and on a
gloo group; the trace must hold one "collective:<operation>" event per call, with its tensors'
shapes, wherever gloo's trace holds the "gloo:<operation>" event, with the same shapes. Read both
from prof.key_averages() and from the exported Chrome trace. Then the calls whose inputs and
outputs differ, or which gloo names after another operation: all_gather, all_gather_coalesced and
all_reduce_coalesced record the inputs' shapes under gloo's names, as torch's own tests require.
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


def profiled_gathers(group, rank, ranks):
    inputs = [torch.full((3, 2), float(rank)), torch.full((5,), float(rank))]
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        dist.all_gather([torch.empty(3, 2) for _ in range(ranks)], inputs[0], group=group)
        dist.all_gather_coalesced([[torch.empty_like(t) for t in inputs] for _ in range(ranks)], inputs, group=group)
        dist.all_reduce_coalesced([t.clone() for t in inputs], group=group)
    return prof


def test_gather_shapes(check, twin, rank, ranks):
    ours = events_of(profiled_gathers(None, rank, ranks), "collective")
    gloo = events_of(profiled_gathers(twin.group, rank, ranks), "gloo")
    check.true(sorted(gloo) == ["all_gather", "all_reduce"], f"gloo's events: {gloo}")
    check.true(ours == gloo, f"all_gather, all_gather_coalesced, all_reduce_coalesced: ours {ours}, gloo's {gloo}")


def main():
    run_against_gloo("test_profiler", [test_ddp_trace, test_gather_shapes])


if __name__ == "__main__":
    main()
