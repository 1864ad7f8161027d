"""Each collective of torch.distributed on the collective backend, with what every rank gets.

    PYTHONPATH=build/python collrun -n 2 /usr/bin/python3 examples/collectives.py
"""
import torch
import torch.distributed as dist

import torch_collective  # noqa: F401  (registers the "collective" backend)


def show(rank, name, value):
    print(f"rank {rank}: {name:<24} {value}", flush=True)


def main():
    dist.init_process_group("collective")
    rank, size = dist.get_rank(), dist.get_world_size()
    mine = torch.arange(4, dtype=torch.float32) + 10 * rank  # rank r holds [10r, 10r+1, 10r+2, 10r+3]

    for op_name in ("SUM", "PRODUCT", "MIN", "MAX", "AVG"):
        tensor = mine.clone()
        dist.all_reduce(tensor, op=getattr(dist.ReduceOp, op_name))
        show(rank, f"all_reduce {op_name}", tensor.tolist())

    tensor = mine.clone()
    dist.broadcast(tensor, src=size - 1)
    show(rank, f"broadcast from {size - 1}", tensor.tolist())

    tensor = mine.clone()
    dist.reduce(tensor, dst=0)
    if rank == 0:
        show(rank, "reduce to 0", tensor.tolist())

    gathered = [torch.empty(4) for _ in range(size)]
    dist.all_gather(gathered, mine)
    show(rank, "all_gather", [t.tolist() for t in gathered])

    flat = torch.empty(4 * size)
    dist.all_gather_into_tensor(flat, mine)
    show(rank, "all_gather_into_tensor", flat.tolist())

    piece = torch.empty(4)
    dist.reduce_scatter_tensor(piece, mine.repeat(size))  # rank r gets the sum of everyone's slice r
    show(rank, "reduce_scatter_tensor", piece.tolist())

    out = torch.empty(2)
    dist.reduce_scatter(out, [mine[:2] + r for r in range(size)])
    show(rank, "reduce_scatter", out.tolist())

    gathered = [torch.empty(4) for _ in range(size)] if rank == 0 else None
    dist.gather(mine, gather_list=gathered, dst=0)
    if rank == 0:
        show(rank, "gather to 0", [t.tolist() for t in gathered])

    out = torch.empty(2)
    dist.scatter(out, scatter_list=[torch.full((2,), float(r)) for r in range(size)] if rank == 0 else None, src=0)
    show(rank, "scatter from 0", out.tolist())

    # all_to_all_single with unequal splits: rank r sends r+1 rows to every rank.
    send = torch.full((size * (rank + 1),), float(rank))
    receive = torch.empty(sum(r + 1 for r in range(size)))
    dist.all_to_all_single(receive, send, output_split_sizes=[r + 1 for r in range(size)],
                           input_split_sizes=[rank + 1] * size)
    show(rank, "all_to_all_single", receive.tolist())

    outputs = [torch.empty(1) for _ in range(size)]
    dist.all_to_all(outputs, [torch.tensor([100.0 * rank + r]) for r in range(size)])
    show(rank, "all_to_all", [t.item() for t in outputs])

    # Asynchronous: the Work completes on the backend's worker thread; its Future chains.
    work = dist.all_reduce(mine.clone(), async_op=True)
    doubled = work.get_future().then(lambda future: future.value()[0] * 2)
    show(rank, "async all_reduce x2", doubled.wait().tolist())

    # A subgroup: ranks 0 and size-1 only (every rank calls new_group).
    pair = dist.new_group([0, size - 1])
    if rank in (0, size - 1):
        tensor = mine.clone()
        dist.all_reduce(tensor, group=pair)
        show(rank, "all_reduce in [0, last]", tensor.tolist())

    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
