"""Receive from any source (recv / irecv without src), against gloo on the same program.

    collrun -n 2 PYTHON tests/python/test_recv_any_source.py      (and -n 3)

Each scenario runs on the "collective" group and on a gloo group of the same ranks: the values
received and the source ranks reported must be the expected ones, and the same as gloo's.
"""
import torch
import torch.distributed as dist

from gloo_parity import run_against_gloo


def many_to_one(group, rank, ranks):
    """Every other rank sends its rank to rank 0, which receives them from any source.

    The barrier closes each round: without it a sender that has finished may send its next
    round's message before a slower sender's first one arrives, and rank 0, receiving from any
    source, rightly takes it. With 3 ranks gloo's rank 0 once got rank 1 twice in CI; with rank 2
    held back a moment both backends did so every time."""
    got = None
    if rank == 0:
        got = []
        for _ in range(ranks - 1):
            tensor = torch.zeros(5)
            source = dist.recv(tensor, group=group)
            got.append((source, tensor[0].item(), tensor[-1].item()))
        got = sorted(got)
    else:
        dist.send(torch.full((5,), float(rank)), dst=0, group=group)
    dist.barrier(group=group)
    return got


def ring_irecv(group, rank, ranks):
    """Everyone sends to the next rank and receives from any source with irecv."""
    received = torch.zeros(1031, dtype=torch.int64)
    send = dist.isend(torch.full((1031,), rank, dtype=torch.int64), dst=(rank + 1) % ranks, group=group)
    work = dist.irecv(received, group=group)
    work.wait()
    send.wait()
    return work._source_rank(), int(received[0]), int(received[-1])


def named_then_any(group, rank, ranks):
    """Rank 1 sends two messages to rank 0, which takes the first by name and the second from any
    source: the named receive must not leave its message to the other."""
    if rank == 1:
        dist.send(torch.tensor([10.0]), dst=0, group=group)
        dist.send(torch.tensor([20.0]), dst=0, group=group)
    elif rank == 0:
        first, second = torch.zeros(1), torch.zeros(1)
        dist.recv(first, src=1, group=group)
        source = dist.recv(second, group=group)
        return first.item(), source, second.item()
    return None


def any_between_collectives(group, rank, ranks):
    """A receive from any source queued among collectives and a pending isend."""
    tensor = torch.ones(4)
    dist.all_reduce(tensor, group=group)
    result = None
    if rank == ranks - 1:
        dist.isend(torch.full((4,), 7.0), dst=0, group=group).wait()
    elif rank == 0:
        received = torch.zeros(4)
        result = (dist.recv(received, group=group), received.sum().item())
    dist.all_reduce(tensor, group=group)
    return result, tensor[0].item()


def test_against_gloo(check, twin, rank, ranks):
    expected = {
        many_to_one: [(r, float(r), float(r)) for r in range(1, ranks)] if rank == 0 else None,
        ring_irecv: ((rank - 1) % ranks, (rank - 1) % ranks, (rank - 1) % ranks),
        named_then_any: (10.0, 1, 20.0) if rank == 0 else None,
        any_between_collectives: ((ranks - 1, 28.0) if rank == 0 else None, float(ranks * ranks)),
    }
    for scenario, value in expected.items():
        for _ in range(3):  # repeated: counters carry over from one scenario to the next
            ours, gloo = twin.both(lambda group: scenario(group, rank, ranks))
            name = scenario.__name__
            check.true(ours == ("ok", value), f"{name}: ours gave {ours}, expected {value}")
            check.true(gloo == ours, f"{name}: gloo gave {gloo}, ours {ours}")


def test_subgroup(check, twin, rank, ranks):
    """In a subgroup the source is reported as a global rank, as torch's recv promises."""
    members = [0, ranks - 1]
    group = dist.new_group(members)
    if rank == ranks - 1:
        dist.send(torch.tensor([3.0]), dst=0, group=group)
    elif rank == 0:
        tensor = torch.zeros(1)
        check.true(dist.recv(tensor, group=group) == ranks - 1, "recv from any source in a subgroup: source")
        check.equal(tensor, torch.tensor([3.0]), "recv from any source in a subgroup: value")


def main():
    run_against_gloo("test_recv_any_source", [test_against_gloo, test_subgroup])


if __name__ == "__main__":
    main()
