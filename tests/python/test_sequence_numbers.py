"""Sequence numbers (_get_sequence_number_for_group) and TORCH_DISTRIBUTED_DEBUG=DETAIL, against gloo.

    collrun -n 2 PYTHON tests/python/test_sequence_numbers.py [--detail]      (and -n 3)

Each collective must move our group's sequence number exactly as it moves a gloo group's on the
same calls, equally on every rank. Sends and receives do not move it (as gloo's on 1.13 and
NCCL's on 2.x; gloo 2.x counts them, and then its own DETAIL checks reject the next collective of
a group of 3 ranks whose third rank took no part). With --detail the program runs under
TORCH_DISTRIBUTED_DEBUG=DETAIL, where torch 2.x wraps the backend in its ProcessGroupWrapper,
which checks every collective's sequence number and shapes across ranks: the operations must
work, and a shape mismatch must raise gloo's exception type.
"""
import os
import sys

if "--detail" in sys.argv:  # read when torch.distributed starts
    os.environ["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

from gloo_parity import run_against_gloo, same_exception_type  # noqa: E402


def operations(rank, ranks):
    def send_recv(group):
        if rank == 0:
            dist.send(torch.ones(2), dst=1, group=group)
        elif rank == 1:
            dist.recv(torch.ones(2), src=0, group=group)

    return {
        "all_reduce": lambda group: dist.all_reduce(torch.ones(3), group=group),
        "all_reduce async": lambda group: dist.all_reduce(torch.ones(3), group=group, async_op=True).wait(),
        "broadcast": lambda group: dist.broadcast(torch.ones(3), src=0, group=group),
        "barrier": lambda group: dist.barrier(group=group),
        "all_gather": lambda group: dist.all_gather([torch.ones(2) for _ in range(ranks)], torch.ones(2),
                                                    group=group),
        "reduce": lambda group: dist.reduce(torch.ones(2), dst=0, group=group),
        "all_reduce_coalesced": lambda group: dist.all_reduce_coalesced([torch.ones(2), torch.ones(3)], group=group),
        "send/recv": send_recv,
    }


def sequence_number(group):
    return dist.distributed_c10d._get_default_group()._get_sequence_number_for_group() if group is None \
        else group._get_sequence_number_for_group()


def test_against_gloo(check, twin, rank, ranks):
    if torch.__version__.startswith("2."):
        check.true(sequence_number(None) == 0 or os.environ.get("TORCH_DISTRIBUTED_DEBUG") == "DETAIL",
                   "sequence numbers start at 0, as gloo's do on 2.x")
    for name, operation in operations(rank, ranks).items():
        steps = []
        for group in (None, twin.group):
            before = sequence_number(group)
            operation(group)
            steps.append(sequence_number(group) - before)
        expected = 0 if name == "send/recv" else steps[1]
        check.true(steps[0] == expected, f"{name}: our sequence number moved by {steps[0]}, gloo's by {steps[1]}")
        # Every rank agrees, whichever ranks took part.
        numbers = [None] * ranks
        dist.all_gather_object(numbers, sequence_number(None))
        check.true(len(set(numbers)) == 1, f"after {name}: sequence numbers differ between ranks: {numbers}")


def test_detail_mismatch(check, twin, rank, ranks):
    """Under DETAIL on 2.x, torch's wrapper names a collective whose shapes differ between ranks
    (torch 1.13 wraps only its own backends in that wrapper, so there is nothing to compare)."""
    if os.environ.get("TORCH_DISTRIBUTED_DEBUG") != "DETAIL" or not torch.__version__.startswith("2."):
        return
    mismatched = lambda group: dist.all_reduce(torch.ones(3 + rank), group=group)  # noqa: E731
    # A fresh gloo group: the twin's numbers differ between ranks after the send/recv above.
    fresh = dist.new_group(backend="gloo")
    ours, gloo = twin.outcome(mismatched, None), twin.outcome(mismatched, fresh)
    same_exception_type(check, ours, gloo, "all_reduce of different shapes under DETAIL")


def main():
    run_against_gloo("test_sequence_numbers", [test_against_gloo, test_detail_mismatch])


if __name__ == "__main__":
    main()
