#!/usr/bin/env python3
"""The PyTorch backend on CUDA tensors, for tools/gpu_check.sh: every operation of the backend with
CUDA tensors on --ranks processes sharing GPU 0 (the library's serialized device mode), float32 and
bfloat16, an odd size, outputs poisoned first, expected values computed on the host from every
rank's known input; asynchronous calls with wait(), a call on a non-default current stream, a call
that mixes CPU and CUDA tensors (an error naming both); the group's own stream (a call waits for its
caller's stream, the caller's later work does not wait for the call, a dropped tensor is not reused
under its call); the ZeRO functions of torch_collective._C
on CUDA tensors against the same calls on CPU tensors, and torch_collective.zero (stages 0-3) on a
model on CUDA against Adam on the full batch; then DistributedDataParallel on CUDA against
single-process training on the full batch.

    PYTHONPATH=<package parent, printed by tools/gpu_torch_build.sh> python3 tools/gpu_torch_check.py

Prints "RESULT torch_collective <check>: PASS|FAIL ..." lines and exits 1 if any failed; every rank
process has a time limit (--timeout), after which all are killed and the run fails. Without a CUDA
device it prints a SKIPPED line and exits 77.
"""

import argparse
import faulthandler
import os
import socket
import subprocess
import sys
import tempfile
import time
import traceback

import gpu_torch_sharded  # beside this file: FSDP2's and the ZeRO engine's checks

SKIPPED = 77
POISON = 77
COUNT = 1031          # odd, and not a multiple of any pack width
BIG_COUNT = 65537     # 256 KiB of float32: several slices of the serialized mode


# ----------------------------------------------------------------------------------------------
# The ranks


def rank_input(torch, rank, count, dtype, offset=0):
    """Rank `rank`'s input: small integers (-1..3), exact in every type under sum, max and avg of
    a few ranks; any rank can compute any other rank's."""
    index = torch.arange(offset, offset + count, dtype=torch.int64)
    return ((rank * 7 + index * 3 + 1) % 5 - 1).to(dtype)


class Checks:
    def __init__(self, rank):
        self.rank = rank
        self.failed = 0

    def report(self, name, ok, detail=""):
        print(f"CHECK {name}|{'PASS' if ok else 'FAIL'}|{detail}", flush=True)
        self.failed += not ok

    def equal(self, name, got, expected):
        got = got.detach().cpu()
        expected = expected.cpu()
        ok = got.dtype == expected.dtype and got.shape == expected.shape and torch_equal(got, expected)
        detail = "" if ok else f"rank {self.rank}: {first_difference(got, expected)}"
        self.report(name, ok, detail)
        return ok


def torch_equal(a, b):
    return bool((a.to(dtype=b.dtype) == b).all())


def first_difference(got, expected):
    if got.shape != expected.shape or got.dtype != expected.dtype:
        return f"got {got.dtype} {tuple(got.shape)}, expected {expected.dtype} {tuple(expected.shape)}"
    bad = (got != expected).flatten().nonzero()
    i = int(bad[0])
    return f"{len(bad)} wrong elements, first at {i}: got {got.flatten()[i].item()}, expected {expected.flatten()[i].item()}"


def run_operations(torch, dist, checks, rank, world, dtype):
    cuda = torch.device("cuda", 0)
    name = str(dtype).replace("torch.", "")
    n = COUNT
    inputs = [rank_input(torch, r, n, dtype) for r in range(world)]
    mine = inputs[rank]

    def summed(tensors):
        return torch.stack([t.double() for t in tensors]).sum(0).to(dtype)

    def poisoned(count):
        return torch.full((count,), POISON, dtype=dtype, device=cuda)

    # all_reduce: SUM on the odd size (and on a larger float32 buffer), MAX, AVG.
    t = mine.to(cuda)
    dist.all_reduce(t)
    checks.equal(f"all_reduce sum {name} {n}", t, summed(inputs))
    if dtype == torch.float32:
        big = [rank_input(torch, r, BIG_COUNT, dtype) for r in range(world)]
        t = big[rank].to(cuda)
        dist.all_reduce(t)
        checks.equal(f"all_reduce sum {name} {BIG_COUNT}", t, summed(big))
    t = mine.to(cuda)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    checks.equal(f"all_reduce max {name} {n}", t, torch.stack(inputs).max(0).values)
    t = mine.to(cuda)
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    expected = (torch.stack([x.double() for x in inputs]).sum(0) / world).to(dtype)
    checks.equal(f"all_reduce avg {name} {n}", t, expected)

    # all_reduce_coalesced: two tensors of different sizes in one call.
    a, b = mine.to(cuda), rank_input(torch, rank, 13, dtype, offset=5).to(cuda)
    if hasattr(dist, "all_reduce_coalesced"):
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            dist.all_reduce_coalesced([a, b])
        checks.equal(f"all_reduce_coalesced {name} (a)", a, summed(inputs))
        checks.equal(f"all_reduce_coalesced {name} (b)", b,
                     summed([rank_input(torch, r, 13, dtype, offset=5) for r in range(world)]))

    # broadcast from the last rank; reduce to rank 0 (the others keep their input).
    root = world - 1
    t = (mine if rank == root else torch.full((n,), POISON, dtype=dtype)).to(cuda)
    dist.broadcast(t, src=root)
    checks.equal(f"broadcast {name} {n}", t, inputs[root])
    t = mine.to(cuda)
    dist.reduce(t, dst=0)
    checks.equal(f"reduce {name} {n}", t, summed(inputs) if rank == 0 else mine)

    # all_gather (list) and all_gather_into_tensor.
    outs = [poisoned(n) for _ in range(world)]
    dist.all_gather(outs, mine.to(cuda))
    checks.equal(f"all_gather {name} {n}", torch.stack([o.cpu() for o in outs]), torch.stack(inputs))
    out = poisoned(n * world)
    dist.all_gather_into_tensor(out, mine.to(cuda))
    checks.equal(f"all_gather_into_tensor {name} {n}", out, torch.cat(inputs))

    # reduce_scatter (list) and reduce_scatter_tensor: rank r gets the sum of every rank's slice r.
    whole = [rank_input(torch, r, n * world, dtype) for r in range(world)]
    expected = summed(whole)[rank * n:(rank + 1) * n]
    out = poisoned(n)
    dist.reduce_scatter(out, list(whole[rank].to(cuda).split(n)))
    checks.equal(f"reduce_scatter {name} {n}", out, expected)
    out = poisoned(n)
    dist.reduce_scatter_tensor(out, whole[rank].to(cuda))
    checks.equal(f"reduce_scatter_tensor {name} {n}", out, expected)

    # all_to_all (list), all_to_all_single with equal and unequal splits.
    outs = [poisoned(n) for _ in range(world)]
    dist.all_to_all(outs, [x.to(cuda) for x in whole[rank].split(n)])
    checks.equal(f"all_to_all {name} {n}", torch.cat([o.cpu() for o in outs]),
                 torch.cat([whole[r][rank * n:(rank + 1) * n] for r in range(world)]))
    out = poisoned(n * world)
    dist.all_to_all_single(out, whole[rank].to(cuda))
    checks.equal(f"all_to_all_single {name} {n}", out,
                 torch.cat([whole[r][rank * n:(rank + 1) * n] for r in range(world)]))
    # Rank s sends (s + d + 1) elements to rank d, from its input's start, in order of d.
    def sizes_from(s):
        return [s + d + 1 for d in range(world)]
    send_sizes = sizes_from(rank)
    recv_sizes = [sizes_from(s)[rank] for s in range(world)]
    source = [rank_input(torch, s, sum(sizes_from(s)), dtype) for s in range(world)]
    out = poisoned(sum(recv_sizes))
    dist.all_to_all_single(out, source[rank].to(cuda), output_split_sizes=recv_sizes, input_split_sizes=send_sizes)
    expected = torch.cat([source[s].split(sizes_from(s))[rank] for s in range(world)])
    checks.equal(f"all_to_all_single unequal splits {name}", out, expected)

    # gather to rank 0, scatter from rank 0.
    outs = [poisoned(n) for _ in range(world)] if rank == 0 else None
    dist.gather(mine.to(cuda), gather_list=outs, dst=0)
    if rank == 0:
        checks.equal(f"gather {name} {n}", torch.stack([o.cpu() for o in outs]), torch.stack(inputs))
    out = poisoned(n)
    pieces = [x.to(cuda) for x in inputs] if rank == 0 else None
    dist.scatter(out, scatter_list=pieces, src=0)
    checks.equal(f"scatter {name} {n}", out, inputs[rank])

    # send/recv around a ring: isend and irecv, then blocking send/recv ordered by rank parity.
    right, left = (rank + 1) % world, (rank - 1) % world
    out = poisoned(n)
    requests = [dist.isend(mine.to(cuda), right), dist.irecv(out, left)]
    for request in requests:
        request.wait()
    checks.equal(f"isend/irecv ring {name} {n}", out, inputs[left])
    out = poisoned(n)
    if rank % 2 == 0:
        dist.send(mine.to(cuda), right)
        dist.recv(out, left)
    else:
        dist.recv(out, left)
        dist.send(mine.to(cuda), right)
    checks.equal(f"send/recv ring {name} {n}", out, inputs[left])
    out = poisoned(n)
    ops = [dist.P2POp(dist.isend, mine.to(cuda), right), dist.P2POp(dist.irecv, out, left)]
    for request in dist.batch_isend_irecv(ops):
        request.wait()
    checks.equal(f"batch_isend_irecv {name} {n}", out, inputs[left])

    dist.barrier()
    checks.report(f"barrier {name}", True)


def run_new_group_send_first(torch, dist, checks, rank, world):
    """A new group's first call is a send and a receive of CUDA tensors on torch's default stream,
    as pipeline parallelism starts: the group's fresh worker thread must have the tensors' device
    current for the library's setup of the device path."""
    cuda = torch.device("cuda", 0)
    group = dist.new_group(list(range(world)))
    right, left = (rank + 1) % world, (rank - 1) % world
    mine = torch.full((1000,), float(rank + 1), device=cuda)
    out = torch.full((1000,), -1.0, device=cuda)
    for request in [dist.isend(mine, right, group=group), dist.irecv(out, left, group=group)]:
        request.wait()
    checks.equal("a new group's first call: isend/irecv of CUDA tensors", out, torch.full((1000,), float(left + 1)))
    dist.destroy_process_group(group)


def run_streams_and_async(torch, dist, checks, rank, world):
    cuda = torch.device("cuda", 0)
    dtype = torch.float32
    inputs = [rank_input(torch, r, COUNT, dtype) for r in range(world)]
    summed = torch.stack(inputs).sum(0)

    # async_op=True: wait() orders the current stream behind the call; a kernel queued after it
    # sees the result, with no host synchronization in between.
    t = inputs[rank].to(cuda)
    work = dist.all_reduce(t, async_op=True)
    work.wait()
    doubled = t * 2
    checks.equal("async all_reduce + wait() then a kernel", doubled, summed * 2)
    torch.cuda.synchronize()
    deadline = time.monotonic() + 10
    while not work.is_completed() and time.monotonic() < deadline:
        time.sleep(0.01)
    checks.report("async work is_completed() after the device is done", work.is_completed())

    # Several asynchronous calls in flight, then their Futures.
    tensors = [rank_input(torch, rank, COUNT, dtype, offset=i).to(cuda) for i in range(3)]
    works = [dist.all_reduce(x, async_op=True) for x in tensors]
    futures = [w.get_future() for w in works]
    results = [f.wait()[0] for f in futures]
    expected = [torch.stack([rank_input(torch, r, COUNT, dtype, offset=i) for r in range(world)]).sum(0)
                for i in range(3)]
    checks.equal("three async all_reduce, Futures", torch.stack([r.cpu() for r in results]), torch.stack(expected))

    # A non-default current stream: the call runs there, and the stream's own later work sees it.
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        t = inputs[rank].to(cuda)
        dist.all_reduce(t)
        after = t + 1
    side.synchronize()
    checks.equal("all_reduce on a non-default stream", after, summed + 1)
    with torch.cuda.stream(side):
        out = torch.full((COUNT * world,), POISON, dtype=dtype, device=cuda)
        work = dist.all_gather_into_tensor(out, inputs[rank].to(cuda), async_op=True)
    work.wait()  # on the default stream: it now waits for the call on `side`
    checks.equal("async all_gather on a side stream, waited from the default stream", out.clone(), torch.cat(inputs))

    # Mixing CPU and CUDA tensors in one call is an error naming the op and both devices.
    try:
        dist.all_gather_into_tensor(torch.zeros(COUNT * world, dtype=dtype),
                                    inputs[rank].to(cuda))
        checks.report("mixed CPU and CUDA tensors refused", False, f"rank {rank}: no error")
    except (RuntimeError, ValueError) as error:
        message = str(error)
        ok = "cpu" in message and "cuda" in message
        checks.report("mixed CPU and CUDA tensors refused", ok, "" if ok else f"rank {rank}: {message[:200]}")
    dist.barrier()


def run_call_streams(torch, dist, checks, rank, world):
    """The group's own stream (docs/pytorch.md, "CUDA tensors"): a call waits for what its caller
    queued before it, the caller's later work does not wait for the call, and a tensor the caller
    drops while its call runs is not handed out again under the call."""
    cuda = torch.device("cuda", 0)
    dtype = torch.float32
    inputs = [rank_input(torch, r, BIG_COUNT, dtype) for r in range(world)]
    summed = torch.stack(inputs).sum(0)
    late = 0.5  # s: how long rank 1 comes late to the calls below

    # The input is written on the caller's stream behind a long spin of the GPU: a call that did not
    # wait for that stream would reduce the poison.
    t = torch.full((BIG_COUNT,), POISON, dtype=dtype, device=cuda)
    mine = inputs[rank].to(cuda)
    torch.cuda._sleep(100_000_000)
    t.copy_(mine)
    dist.all_reduce(t)
    checks.equal("all_reduce of an input written late on the caller's stream", t, summed)

    own_stream = os.environ.get("TORCH_COLLECTIVE_CUDA_STREAM", "internal") != "current"
    if own_stream:
        # Rank 1 comes late: rank 0's kernel queued on its stream after the call ends long before the call.
        t = inputs[rank].to(cuda)
        torch.cuda.synchronize()
        if rank == 1:
            time.sleep(late)
        work = dist.all_reduce(t, async_op=True)
        if rank == 0:
            time.sleep(0.05)  # the worker has queued the call by now
            marker = torch.cuda.Event()
            torch.ones(1, device=cuda).sum()  # a kernel of its own, touching nothing of the call
            marker.record()
            deadline = time.monotonic() + late * 0.8
            while not marker.query() and time.monotonic() < deadline:
                time.sleep(0.001)
            overtook = marker.query() and not work.is_completed()
            checks.report("the caller's later kernel does not wait for the call (peer late)", overtook,
                          "" if overtook else f"rank {rank}: kernel done {marker.query()}, call done {work.is_completed()}")
        work.wait()
        checks.equal("all_reduce with a late peer", t, summed)

    # Rank 0 drops its tensor and the call's Work while the call waits for rank 1, and fills new
    # tensors of that size on its stream: had the allocator handed the block out again, rank 1's
    # sum would hold the poison.
    t = inputs[rank].to(cuda)
    torch.cuda.synchronize()
    dist.barrier()
    if rank == 1:
        time.sleep(late)
        dist.all_reduce(t)
        checks.equal("all_reduce whose input a peer dropped while it ran", t, summed)
    else:
        dist.all_reduce(t, async_op=True)  # the Work is dropped at once
        del t
        time.sleep(0.05)  # the worker has queued the call and let go of it
        poison = [torch.full((BIG_COUNT,), POISON, dtype=dtype, device=cuda) for _ in range(4)]
        torch.cuda.synchronize()
        del poison
    dist.barrier()


def run_ddp(torch, dist, checks, rank, world):
    from torch.nn.parallel import DistributedDataParallel

    cuda = torch.device("cuda", 0)
    steps, per_rank = 4, 8

    def model():
        torch.manual_seed(1234)
        return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 4)).to(cuda)

    generator = torch.Generator().manual_seed(99)
    batches = [(torch.randn(world * per_rank, 16, generator=generator),
                torch.randn(world * per_rank, 4, generator=generator)) for _ in range(steps)]

    reference = model()
    optimizer = torch.optim.SGD(reference.parameters(), lr=0.1)
    for x, y in batches:
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(reference(x.to(cuda)), y.to(cuda)).backward()
        optimizer.step()

    ddp = DistributedDataParallel(model(), device_ids=[0], bucket_cap_mb=0.001)  # several buckets
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)
    shard = slice(rank * per_rank, (rank + 1) * per_rank)
    for x, y in batches:
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(ddp(x[shard].to(cuda)), y[shard].to(cuda)).backward()
        optimizer.step()
    worst = max(float((p - q).abs().max()) for p, q in zip(ddp.module.parameters(), reference.parameters()))
    checks.report(f"DDP {steps} steps on CUDA = full-batch training", worst <= 1e-5, f"max difference {worst:.2e}")


def run_zero_functions(torch, dist, checks, rank, world):
    """torch_collective._C's ZeRO functions on CUDA tensors against the same calls on CPU tensors:
    the reduce-scatter of gradients (sum exactly, average within a rounding), the all-gather of
    parameters, the optimizer step (bit for bit: the kernel rounds as the host loops), the norm."""
    from torch_collective import _C

    cuda = torch.device("cuda", 0)
    group = dist.distributed_c10d._get_default_group()

    def backend(device):
        return group._get_backend(device) if hasattr(group, "_get_backend") else group

    total = 10007
    p = _C.ZeroPartition(total, world, rank)
    grads = torch.zeros(p.padded)
    grads[:total] = rank_input(torch, rank, total, torch.float32)
    for average in (False, True):
        host_shard, device_shard = torch.zeros(p.shard), torch.zeros(p.shard, device=cuda)
        _C.zero_reduce_scatter_gradients(backend(torch.device("cpu")), grads.clone(), host_shard, 1000, False, average,
                                         p).wait()
        _C.zero_reduce_scatter_gradients(backend(cuda), grads.to(cuda), device_shard, 1000, False, average, p).wait()
        got = device_shard.cpu()
        ok = torch.equal(got, host_shard) if not average else bool(torch.allclose(got, host_shard, rtol=1e-6, atol=0))
        checks.report(f"zero_reduce_scatter_gradients on CUDA ({'average' if average else 'sum'})", ok,
                      "" if ok else f"rank {rank}: {first_difference(got, host_shard)}")
    host_params, device_params = torch.zeros(p.padded), torch.zeros(p.padded, device=cuda)
    shard = rank_input(torch, rank, p.shard, torch.float32, offset=p.offset)
    _C.zero_all_gather_parameters(backend(torch.device("cpu")), shard, host_params, 777, p).wait()
    _C.zero_all_gather_parameters(backend(cuda), shard.to(cuda), device_params, 777, p).wait()
    checks.equal("zero_all_gather_parameters on CUDA", device_params, host_params)

    generator = torch.Generator().manual_seed(7 + rank)
    master = torch.randn(4099, generator=generator)
    grad = torch.randn(4099, generator=generator).to(torch.bfloat16)
    host = [master.clone(), torch.zeros(4099), torch.zeros(4099), torch.zeros(4099, dtype=torch.bfloat16)]
    device = [t.to(cuda) for t in host]
    for step in (1, 2, 3):
        for (m, s0, s1, out), g in ((host, grad), (device, grad.to(cuda))):
            _C.zero_optimizer_step("adamw", m, g, s0, s1, out, lr=1e-3, weight_decay=0.01, step=step, grad_scale=0.5)
    for name, got, want in zip(("master", "exp_avg", "exp_avg_sq", "bf16 copy"), device, host):
        checks.equal(f"zero_optimizer_step on CUDA: {name} bit for bit", got.view(torch.int16 if got.dtype ==
                     torch.bfloat16 else torch.int32), want.view(torch.int16 if want.dtype == torch.bfloat16 else
                     torch.int32))
    want_sum, want_flag = _C.zero_squared_norm(grad)
    got_sum, got_flag = _C.zero_squared_norm(grad.to(cuda))
    ok = abs(got_sum - want_sum) <= 1e-12 * abs(want_sum) and got_flag == want_flag
    checks.report("zero_squared_norm on CUDA", ok, f"{got_sum!r} against {want_sum!r}")


def rank_main(rank, world, port, timeout):
    faulthandler.enable()  # a crash in native code still names the Python line it came from
    faulthandler.dump_traceback_later(max(timeout - 15, 5), exit=False)
    import torch
    import torch.distributed as dist
    import torch_collective

    checks = Checks(rank)
    if not torch_collective.cuda_support:
        checks.report("extension built with CUDA support", False,
                      f"torch_collective from {os.path.dirname(torch_collective.__file__)} takes CPU tensors only")
        return 1
    torch.cuda.set_device(0)
    dist.init_process_group("collective", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    for part in (lambda: run_new_group_send_first(torch, dist, checks, rank, world),
                 lambda: run_operations(torch, dist, checks, rank, world, torch.float32),
                 lambda: run_operations(torch, dist, checks, rank, world, torch.bfloat16),
                 lambda: run_streams_and_async(torch, dist, checks, rank, world),
                 lambda: run_call_streams(torch, dist, checks, rank, world),
                 lambda: run_zero_functions(torch, dist, checks, rank, world),
                 lambda: gpu_torch_sharded.run_zero_engine(torch, dist, checks, rank, world),
                 lambda: gpu_torch_sharded.run_zero_gpt(torch, dist, checks, rank, world),
                 lambda: gpu_torch_sharded.run_zero_checkpoints(
                     torch, dist, checks, rank, world,
                     os.path.join(tempfile.gettempdir(), f"coll-gpu-checkpoint-{port}")),
                 lambda: run_ddp(torch, dist, checks, rank, world),
                 lambda: gpu_torch_sharded.run_fsdp2(torch, dist, checks, rank, world)):
        try:
            part()
        except Exception as error:  # report and stop: the peers would wait for a call never made
            checks.report("exception", False, f"rank {rank}: {type(error).__name__}: {str(error)[:300]}")
            traceback.print_exc()
            return 1
    dist.destroy_process_group()
    return 1 if checks.failed else 0


# ----------------------------------------------------------------------------------------------
# The launcher


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(world, timeout):
    port = free_port()
    env = dict(os.environ)
    env.setdefault("COLL_TIMEOUT_MS", "60000")
    procs = [subprocess.Popen([sys.executable, os.path.abspath(__file__), "--rank", str(r), "--ranks", str(world),
                               "--port", str(port), "--timeout", str(timeout)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
             for r in range(world)]
    deadline = time.monotonic() + timeout
    outputs, timed_out = [], []
    for r, proc in enumerate(procs):
        try:
            out, _ = proc.communicate(timeout=max(deadline - time.monotonic(), 1))
        except subprocess.TimeoutExpired:
            timed_out.append(r)
            for p in procs:
                p.kill()
            out, _ = proc.communicate()
        outputs.append(out)
    return procs, outputs, timed_out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--timeout", type=int, default=240, help="seconds for the whole run of every rank")
    parser.add_argument("--rank", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rank is not None:
        sys.exit(rank_main(args.rank, args.ranks, args.port, args.timeout))

    try:
        import torch
    except Exception as error:
        print(f"RESULT torch_collective cuda: SKIPPED cannot import torch ({error})")
        sys.exit(SKIPPED)
    if not torch.cuda.is_available():
        print(f"RESULT torch_collective cuda: SKIPPED no CUDA device (torch {torch.__version__}, "
              f"CUDA {torch.version.cuda or 'none'})")
        sys.exit(SKIPPED)

    start = time.monotonic()
    procs, outputs, timed_out = launch(args.ranks, args.timeout)
    results = {}  # check -> [status per reporting rank], details
    order = []
    for out in outputs:
        for line in out.splitlines():
            if not line.startswith("CHECK "):
                continue
            name, status, detail = (line[6:].split("|", 2) + ["", ""])[:3]
            if name not in results:
                results[name] = ([], [])
                order.append(name)
            results[name][0].append(status)
            if detail:
                results[name][1].append(detail)
    failed = False
    for name in order:
        statuses, details = results[name]
        ok = all(s == "PASS" for s in statuses)
        failed |= not ok
        print(f"RESULT torch_collective {name}: {'PASS' if ok else 'FAIL'} {'; '.join(details)}".rstrip())
    codes = [p.returncode for p in procs]
    if timed_out or any(codes) or not order:
        failed = True
        why = f"ranks {timed_out} timed out after {args.timeout} s" if timed_out else f"exit codes {codes}"
        print(f"RESULT torch_collective ranks: FAIL {why}")
        for r, out in enumerate(outputs):
            tail = [line for line in out.splitlines() if not line.startswith("CHECK ")][-25:]
            if tail:
                print(f"--- rank {r}, last lines:\n" + "\n".join(tail))
    passed = sum(all(s == "PASS" for s in results[n][0]) for n in order)
    print(f"RESULT torch_collective summary: {'FAIL' if failed else 'PASS'} {passed}/{len(order)} checks, "
          f"{args.ranks} ranks on GPU 0, {time.monotonic() - start:.0f} s (torch {torch.__version__})")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
