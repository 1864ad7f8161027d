#!/usr/bin/env python3
"""Which torch.distributed features work on a backend: each is tried, and the outcome recorded.

    PYTHONPATH=build/python build/tools/collrun/collrun -n 2 /usr/bin/python3 \\
        tools/torch_features.py --backend collective --out /tmp/features-collective-1.13.json
    tools/torch_features.py --table A.json B.json ...       # the Markdown table of docs/pytorch.md

Each feature runs on 2 ranks with small CPU tensors; "yes" means it ran and gave the right values,
otherwise the first line of the error is kept. The table has one column per (backend, torch).
"""
import argparse
import datetime
import json
import os
import sys


def features(dist, torch):
    """(name, function) pairs; each function raises on failure and returns None on success."""
    rank, ranks = dist.get_rank(), dist.get_world_size()
    total = float(sum(range(1, ranks + 1)))
    band_of_ranks = -1
    for value in range(1, ranks + 1):
        band_of_ranks &= value

    def expect(tensor, value):
        if not torch.allclose(tensor.double(), torch.full_like(tensor, value).double()):
            raise AssertionError(f"got {tensor.flatten()[:4].tolist()}, expected {value}")

    def all_reduce(dtype, op=None, expected=total):
        def run():
            tensor = torch.full((5,), float(rank + 1), dtype=dtype)
            dist.all_reduce(tensor, op=op or dist.ReduceOp.SUM)
            expect(tensor, expected)
        return run

    def reduce_scatter_list():
        out = torch.zeros(3)
        dist.reduce_scatter(out, [torch.full((3,), float(rank + 1)) for _ in range(ranks)])
        expect(out, total)

    def reduce_scatter_tensor():
        out = torch.zeros(3)
        dist.reduce_scatter_tensor(out, torch.full((3 * ranks,), float(rank + 1)))
        expect(out, total)

    def all_gather_into_tensor():
        out = torch.zeros(3 * ranks)
        dist.all_gather_into_tensor(out, torch.full((3,), float(rank)))
        expect(out.view(ranks, 3).sum(0), float(sum(range(ranks))))

    def all_to_all_unequal():
        ins = [r + 1 for r in range(ranks)]
        out = torch.zeros(ranks * (rank + 1))
        dist.all_to_all_single(out, torch.ones(sum(ins)), [rank + 1] * ranks, ins)
        expect(out, 1.0)

    def all_to_all_list():
        outs = [torch.zeros(2) for _ in range(ranks)]
        dist.all_to_all(outs, [torch.full((2,), float(rank)) for _ in range(ranks)])
        expect(torch.stack(outs).sum(0), float(sum(range(ranks))))

    def all_reduce_coalesced():
        tensors = [torch.full((3,), float(rank + 1)), torch.full((2,), float(rank + 1))]
        dist.all_reduce_coalesced(tensors)
        expect(tensors[1], total)

    def all_gather_coalesced():
        outs = [[torch.zeros(2), torch.zeros(3)] for _ in range(ranks)]
        dist.all_gather_coalesced(outs, [torch.full((2,), float(rank)), torch.full((3,), float(rank))])
        expect(outs[1][1], 1.0)

    def coalescing_manager():
        tensors = [torch.full((3,), float(rank + 1)), torch.full((2,), float(rank + 1))]
        with dist._coalescing_manager():
            for tensor in tensors:
                dist.all_reduce(tensor)
        expect(tensors[0], total)

    def monitored_barrier():
        dist.monitored_barrier(timeout=datetime.timedelta(seconds=30))

    def recv_any_source():
        if rank == 0:
            tensor = torch.zeros(2)
            dist.recv(tensor)
            expect(tensor, 1.0)
        elif rank == 1:
            dist.send(torch.ones(2), dst=0)

    def sparse_all_reduce():
        sparse = torch.sparse_coo_tensor(torch.tensor([[0, rank + 1]]), torch.ones(2), (ranks + 2,))
        dist.all_reduce(sparse)
        expect(sparse.to_dense()[0:1], float(ranks))

    def batch_isend_irecv():
        received = torch.zeros(2)
        for work in dist.batch_isend_irecv([dist.P2POp(dist.isend, torch.full((2,), float(rank)), (rank + 1) % ranks),
                                            dist.P2POp(dist.irecv, received, (rank - 1) % ranks)]):
            work.wait()
        expect(received, float((rank - 1) % ranks))

    def split_group():
        group = dist.split_group(split_ranks=[list(range(ranks))])
        tensor = torch.ones(2)
        dist.all_reduce(tensor, group=group)
        expect(tensor, float(ranks))

    def objects():
        gathered = [None] * ranks
        dist.all_gather_object(gathered, {"rank": rank})
        if [g["rank"] for g in gathered] != list(range(ranks)):
            raise AssertionError(gathered)

    def complex_all_reduce():
        tensor = torch.full((2,), complex(rank + 1, 1), dtype=torch.complex64)
        dist.all_reduce(tensor)
        if tensor[0] != complex(total, ranks):
            raise AssertionError(tensor)

    def bool_xor():
        tensor = torch.tensor([rank == 0, True])
        dist.all_reduce(tensor, op=dist.ReduceOp.BXOR)
        if tensor.tolist() != [True, ranks % 2 == 1]:
            raise AssertionError(tensor)

    def profiler_events():
        from torch.profiler import profile

        with profile(record_shapes=True) as prof:
            dist.all_reduce(torch.ones(7))
        name = f"{dist.get_backend()}:all_reduce"
        shapes = [event.input_shapes for event in prof.key_averages(group_by_input_shape=True) if event.key == name]
        if shapes != [[[7]]]:
            raise AssertionError(f"no event {name} with input shape [7] in the profile: {shapes}")

    def timeout_wording():
        group = dist.new_group(list(range(ranks)), timeout=datetime.timedelta(seconds=1))
        if rank != 0:
            return
        try:
            dist.barrier(group=group)
        except RuntimeError as error:
            if "Timed out" not in str(error):
                raise AssertionError(f"the error does not say Timed out: {str(error)[:60]}")
            return
        raise AssertionError("a barrier nobody joins did not time out")

    def sequence_numbers():
        group = dist.distributed_c10d._get_default_group()
        before = group._get_sequence_number_for_group()
        dist.all_reduce(torch.ones(1))
        numbers = [None] * ranks
        dist.all_gather_object(numbers, (before, group._get_sequence_number_for_group()))
        if len(set(numbers)) != 1 or numbers[0][1] <= numbers[0][0]:
            raise AssertionError(f"sequence numbers differ between ranks or do not grow: {numbers}")

    return [
        ("all_reduce float32 SUM", all_reduce(torch.float32)),
        ("all_reduce AVG", all_reduce(torch.float32, dist.ReduceOp.AVG, total / ranks)),
        ("all_reduce float16", all_reduce(torch.float16)),
        ("all_reduce bfloat16", all_reduce(torch.bfloat16)),
        ("all_reduce BAND (int)", all_reduce(torch.int32, dist.ReduceOp.BAND, float(band_of_ranks))),
        ("all_reduce BXOR (bool)", bool_xor),
        ("all_reduce complex64", complex_all_reduce),
        ("all_reduce sparse (COO)", sparse_all_reduce),
        ("reduce_scatter (list)", reduce_scatter_list),
        ("reduce_scatter_tensor", reduce_scatter_tensor),
        ("all_gather_into_tensor", all_gather_into_tensor),
        ("all_to_all_single, unequal splits", all_to_all_unequal),
        ("all_to_all (list)", all_to_all_list),
        ("batch_isend_irecv", batch_isend_irecv),
        ("recv from any source", recv_any_source),
        ("all_reduce_coalesced", all_reduce_coalesced),
        ("all_gather_coalesced", all_gather_coalesced),
        ("_coalescing_manager block", coalescing_manager),
        ("monitored_barrier", monitored_barrier),
        ("split_group", split_group),
        ("object collectives", objects),
        ("torch.profiler events", profiler_events),
        ("sequence numbers", sequence_numbers),
        # Last: on gloo a timed-out group closes connections that later features would need.
        ("timeout error says Timed out", timeout_wording),
    ]


def probe(args):
    import warnings

    warnings.filterwarnings("ignore")
    import torch
    import torch.distributed as dist
    import torch_collective  # noqa: F401

    torch.set_num_threads(1)
    dist.init_process_group(args.backend, timeout=datetime.timedelta(seconds=20))
    results = {}
    for name, run in features(dist, torch):
        if name == "split_group" and not hasattr(dist, "split_group"):
            results[name] = "not in this torch"
            continue
        if name == "_coalescing_manager block" and not hasattr(dist, "_coalescing_manager"):
            results[name] = "not in this torch"
            continue
        try:
            run()
            outcome = "yes"
        except Exception as error:  # the outcome is the point: keep the message
            outcome = "no: " + (str(error).strip().splitlines() or [type(error).__name__])[0][:110]
        # Agree across ranks: a feature works only if it worked everywhere.
        outcomes = [None] * dist.get_world_size()
        try:
            dist.all_gather_object(outcomes, outcome)
        except Exception:
            outcomes = [outcome]
        results[name] = next((o for o in outcomes if o != "yes"), "yes")
        try:
            dist.barrier()
        except Exception:
            pass
    if dist.get_rank() == 0:
        with open(args.out, "w") as file:
            json.dump({"backend": args.backend, "torch": torch.__version__.split("+")[0], "results": results}, file,
                      indent=1)
    os._exit(0)  # a failed feature may leave a group unusable; the results are written


def table(paths):
    columns = [json.load(open(path)) for path in paths]
    names = list(columns[0]["results"])
    print("| feature | " + " | ".join(f"{c['backend']} {c['torch']}" for c in columns) + " |")
    print("| --- |" + " --- |" * len(columns))
    for name in names:
        cells = []
        for column in columns:
            outcome = column["results"].get(name, "")
            cells.append("yes" if outcome == "yes" else outcome.replace("|", "/"))
        print(f"| {name} | " + " | ".join(cells) + " |")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", help="probe this backend (run under a launcher)")
    parser.add_argument("--out", help="where rank 0 writes the outcomes (JSON)")
    parser.add_argument("--table", nargs="+", metavar="JSON", help="print the Markdown table of these outcomes")
    args = parser.parse_args()
    if args.table:
        table(args.table)
    elif args.backend and args.out:
        probe(args)
    else:
        parser.error("give --backend and --out (under a launcher), or --table")


if __name__ == "__main__":
    sys.exit(main())
