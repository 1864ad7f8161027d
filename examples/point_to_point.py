"""Point-to-point on the collective backend: blocking send/recv, then immediate isend/irecv.

    PYTHONPATH=build/python collrun -n 2 /usr/bin/python3 examples/point_to_point.py
"""
import torch
import torch.distributed as dist

import torch_collective  # noqa: F401  (registers the "collective" backend)


def main():
    dist.init_process_group("collective")  # RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT from collrun
    rank, size = dist.get_rank(), dist.get_world_size()
    right, left = (rank + 1) % size, (rank - 1) % size

    # Blocking: rank 0 starts a token around the ring; everyone else passes it on, adding one.
    token = torch.zeros(1)
    if rank == 0:
        dist.send(token + 1, dst=right)
        dist.recv(token, src=left)
        print(f"rank 0: the token came back as {token.item():.0f} after {size} hops")
    else:
        dist.recv(token, src=left)
        dist.send(token + 1, dst=right)

    # Immediate: every rank sends to its right and receives from its left at once, then waits.
    # The backend starts them together, so this works whatever the size.
    outgoing = torch.full((1 << 20,), float(rank))
    incoming = torch.empty_like(outgoing)
    requests = [dist.isend(outgoing, dst=right), dist.irecv(incoming, src=left)]
    for request in requests:
        request.wait()
    print(f"rank {rank}: received {incoming.numel()} values of {incoming[0].item():.0f} from rank {left}")

    # The same exchange as one batch.
    requests = dist.batch_isend_irecv([dist.P2POp(dist.isend, outgoing, right), dist.P2POp(dist.irecv, incoming, left)])
    for request in requests:
        request.wait()
    assert incoming[0].item() == left

    dist.destroy_process_group()


if __name__ == "__main__":
    main()
