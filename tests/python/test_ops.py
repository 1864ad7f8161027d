"""Every torch.distributed operation on the collective backend, x every type x odd sizes.

    collrun -n 2 /usr/bin/python3 tests/python/test_ops.py     (and -n 3)

Each rank checks its outputs against references computed from every rank's known input
(common.rank_input); outputs are poisoned before each call, so a call that leaves any element
unwritten fails. Also: non-contiguous tensors, subgroups (new_group), and the order in which
asynchronous Work completes.
"""
import torch
import torch.distributed as dist

from common import (DTYPES, FLAT_ALL_GATHERS, FLAT_REDUCE_SCATTERS, POISON, Checker, noncontiguous, poisoned,
                    rank_input, reduce_reference)

# Odd sizes in elements: the one-shot path (small), FIFO rings and trees (middle) and, for the
# larger types, direct reads (over 1 MiB per rank).
SIZES = [1, 13, 1031, 40009, 300007]
# (name, op): torch 1.13's ReduceOp objects print without their name.
REDUCE_OPS = [(name, getattr(dist.ReduceOp, name)) for name in ("SUM", "PRODUCT", "MIN", "MAX", "AVG")]


def cases():
    for dtype in DTYPES:
        for count in SIZES:
            yield dtype, count


def inputs_of_all(ranks, count, dtype, offset=0):
    return [rank_input(r, count, dtype, offset) for r in range(ranks)]


def test_all_reduce(check, rank, ranks):
    for dtype, count in cases():
        for name, op in REDUCE_OPS:
            tensor = rank_input(rank, count, dtype)
            dist.all_reduce(tensor, op=op)
            check.equal(tensor, reduce_reference(inputs_of_all(ranks, count, dtype), op),
                        f"all_reduce {name} {dtype} x{count}")


def test_broadcast(check, rank, ranks):
    for dtype, count in cases():
        for root in range(ranks):
            tensor = rank_input(rank, count, dtype) if rank == root else poisoned(count, dtype)
            dist.broadcast(tensor, src=root)
            check.equal(tensor, rank_input(root, count, dtype), f"broadcast root {root} {dtype} x{count}")


def test_reduce(check, rank, ranks):
    for dtype, count in cases():
        for name, op in REDUCE_OPS:
            root = count % ranks
            tensor = rank_input(rank, count, dtype)
            dist.reduce(tensor, dst=root, op=op)
            if rank == root:
                check.equal(tensor, reduce_reference(inputs_of_all(ranks, count, dtype), op),
                            f"reduce {name} root {root} {dtype} x{count}")


def test_all_gather(check, rank, ranks):
    for dtype, count in cases():
        outputs = [poisoned(count, dtype) for _ in range(ranks)]
        dist.all_gather(outputs, rank_input(rank, count, dtype))
        for r in range(ranks):
            check.equal(outputs[r], rank_input(r, count, dtype), f"all_gather slot {r} {dtype} x{count}")
        for gather in FLAT_ALL_GATHERS:
            output = poisoned(ranks * count, dtype)
            gather(output, rank_input(rank, count, dtype))
            check.equal(output, torch.cat(inputs_of_all(ranks, count, dtype)), f"{gather.__name__} {dtype} x{count}")

        # Outputs of different sizes, one of them empty (collAllGatherV): rank r sends size(r) elements.
        def size(r):
            return (count + 3 * r) % 5 if r != 1 else 0

        outputs = [poisoned(size(r), dtype) for r in range(ranks)]
        dist.all_gather(outputs, rank_input(rank, size(rank), dtype))
        for r in range(ranks):
            check.equal(outputs[r], rank_input(r, size(r), dtype), f"all_gather uneven slot {r} {dtype} x{count}")


def test_reduce_scatter(check, rank, ranks):
    for dtype, count in cases():
        for name, op in REDUCE_OPS:
            expected = reduce_reference(inputs_of_all(ranks, count, dtype, offset=rank * count), op)
            output = poisoned(count, dtype)
            pieces = [rank_input(rank, count, dtype, offset=j * count) for j in range(ranks)]
            dist.reduce_scatter(output, pieces, op=op)
            check.equal(output, expected, f"reduce_scatter {name} {dtype} x{count}")
            for scatter in FLAT_REDUCE_SCATTERS:
                output = poisoned(count, dtype)
                scatter(output, rank_input(rank, ranks * count, dtype), op=op)
                check.equal(output, expected, f"{scatter.__name__} {name} {dtype} x{count}")


def test_gather_scatter(check, rank, ranks):
    for dtype, count in cases():
        root = (count + 1) % ranks
        outputs = [poisoned(count, dtype) for _ in range(ranks)] if rank == root else None
        dist.gather(rank_input(rank, count, dtype), gather_list=outputs, dst=root)
        if rank == root:
            for r in range(ranks):
                check.equal(outputs[r], rank_input(r, count, dtype), f"gather root {root} slot {r} {dtype} x{count}")
        pieces = [rank_input(root, count, dtype, offset=j * count) for j in range(ranks)] if rank == root else None
        output = poisoned(count, dtype)
        dist.scatter(output, scatter_list=pieces, src=root)
        check.equal(output, rank_input(root, count, dtype, offset=rank * count),
                    f"scatter root {root} {dtype} x{count}")


def test_all_to_all(check, rank, ranks):
    for dtype, count in cases():
        output = poisoned(ranks * count, dtype)
        dist.all_to_all_single(output, rank_input(rank, ranks * count, dtype))
        expected = torch.cat([rank_input(r, count, dtype, offset=rank * count) for r in range(ranks)])
        check.equal(output, expected, f"all_to_all_single {dtype} x{count}")

        # Unequal splits, some empty: rows(src, dst) rows of 3 columns go from src to dst.
        def rows(src, dst):
            return (src + 2 * dst + count) % 4

        def input_of(r):
            total = sum(rows(r, j) for j in range(ranks))
            return rank_input(r, total * 3, dtype).view(total, 3)

        output = torch.full((sum(rows(j, rank) for j in range(ranks)), 3), POISON, dtype=dtype)
        dist.all_to_all_single(output, input_of(rank), output_split_sizes=[rows(j, rank) for j in range(ranks)],
                               input_split_sizes=[rows(rank, j) for j in range(ranks)])
        expected = torch.cat([input_of(j)[sum(rows(j, k) for k in range(rank)):][:rows(j, rank)]
                              for j in range(ranks)])
        check.equal(output, expected, f"all_to_all_single unequal splits {dtype} x{count}")

        # The list form, every pair of ranks exchanging a different size.
        def size(src, dst):
            return count + src + 2 * dst

        outputs = [poisoned(size(j, rank), dtype) for j in range(ranks)]
        dist.all_to_all(outputs, [rank_input(rank, size(rank, j), dtype, offset=j) for j in range(ranks)])
        for j in range(ranks):
            check.equal(outputs[j], rank_input(j, size(j, rank), dtype, offset=rank),
                        f"all_to_all from {j} {dtype} x{count}")


def test_point_to_point(check, rank, ranks):
    for dtype, count in cases():
        # Blocking, one pair at a time: the lower rank sends first.
        for low in range(ranks):
            for high in range(low + 1, ranks):
                if rank not in (low, high):
                    continue
                peer = high if rank == low else low
                received = poisoned(count, dtype)
                if rank == low:
                    dist.send(rank_input(rank, count, dtype), dst=peer)
                    dist.recv(received, src=peer)
                else:
                    dist.recv(received, src=peer)
                    dist.send(rank_input(rank, count, dtype), dst=peer)
                check.equal(received, rank_input(peer, count, dtype), f"send/recv {peer}->{rank} {dtype} x{count}")
        # Immediate: everyone sends to everyone first and only then receives (the backend batches
        # them, so this works whatever the size).
        peers = [p for p in range(ranks) if p != rank]
        received = {p: poisoned(count, dtype) for p in peers}
        requests = [dist.isend(rank_input(rank, count, dtype, offset=p), dst=p) for p in peers]
        requests += [dist.irecv(received[p], src=p) for p in peers]
        for request in requests:
            request.wait()
        for p in peers:
            check.equal(received[p], rank_input(p, count, dtype, offset=rank),
                        f"isend/irecv {p}->{rank} {dtype} x{count}")
        # A ring through batch_isend_irecv.
        right, left = (rank + 1) % ranks, (rank - 1) % ranks
        received = poisoned(count, dtype)
        for request in dist.batch_isend_irecv([dist.P2POp(dist.isend, rank_input(rank, count, dtype), right),
                                               dist.P2POp(dist.irecv, received, left)]):
            request.wait()
        check.equal(received, rank_input(left, count, dtype), f"batch_isend_irecv ring {dtype} x{count}")


def test_noncontiguous(check, rank, ranks):
    """Strided tensors are staged in contiguous copies and written back, nothing else touched."""
    count = 1031
    for dtype in (torch.float32, torch.bfloat16, torch.int64):
        tensor = noncontiguous(rank_input(rank, count, dtype))
        dist.all_reduce(tensor)
        check.equal(tensor, reduce_reference(inputs_of_all(ranks, count, dtype), dist.ReduceOp.SUM),
                    f"all_reduce non-contiguous {dtype}")
        check.true(bool((tensor._base[1::2] == POISON).all()), f"all_reduce non-contiguous {dtype} wrote between")
        tensor = noncontiguous(rank_input(rank, count, dtype) if rank == 0 else poisoned(count, dtype))
        dist.broadcast(tensor, src=0)
        check.equal(tensor, rank_input(0, count, dtype), f"broadcast non-contiguous {dtype}")
        outputs = [noncontiguous(poisoned(count, dtype)) for _ in range(ranks)]
        dist.all_gather(outputs, noncontiguous(rank_input(rank, count, dtype)))
        for r in range(ranks):
            check.equal(outputs[r], rank_input(r, count, dtype), f"all_gather non-contiguous {dtype}")
        output = noncontiguous(poisoned(count, dtype))
        FLAT_REDUCE_SCATTERS[0](output, noncontiguous(rank_input(rank, ranks * count, dtype)))
        check.equal(output, reduce_reference(inputs_of_all(ranks, count, dtype, offset=rank * count),
                                             dist.ReduceOp.SUM), f"reduce_scatter non-contiguous {dtype}")
        received = noncontiguous(poisoned(count, dtype))
        right, left = (rank + 1) % ranks, (rank - 1) % ranks
        requests = [dist.isend(noncontiguous(rank_input(rank, count, dtype)), right), dist.irecv(received, left)]
        for request in requests:
            request.wait()
        check.equal(received, rank_input(left, count, dtype), f"isend/irecv non-contiguous {dtype}")


def test_bool(check, rank, ranks):
    """bool travels as bytes (broadcast, all_gather), as on Gloo."""
    values = rank_input(rank, 29, torch.int64) > 1
    dist.broadcast(values, src=ranks - 1)
    check.equal(values, rank_input(ranks - 1, 29, torch.int64) > 1, "broadcast bool")
    outputs = [torch.zeros(29, dtype=torch.bool) for _ in range(ranks)]
    dist.all_gather(outputs, rank_input(rank, 29, torch.int64) > 1)
    for r in range(ranks):
        check.equal(outputs[r], rank_input(r, 29, torch.int64) > 1, "all_gather bool")


def test_async_order(check, rank, ranks):
    """Work runs in the order it was issued: once the last is done, every earlier one is too."""
    tensors = [rank_input(rank, count, torch.float32) for count in (300007, 40009, 1031, 13, 1)]
    works = [dist.all_reduce(t, async_op=True) for t in tensors]
    works[-1].wait()
    for i, work in enumerate(works):
        check.true(work.is_completed(), f"async work {i} completed once the last one was")
    for t in tensors:
        check.equal(t, reduce_reference(inputs_of_all(ranks, t.numel(), torch.float32), dist.ReduceOp.SUM),
                    "async all_reduce result")
    # Futures: the value is the output list; then() chains on the worker's completion.
    tensor = rank_input(rank, 1031, torch.float64)
    future = dist.all_reduce(tensor, async_op=True).get_future().then(lambda f: f.value()[0] * 2)
    check.equal(future.wait(), 2 * reduce_reference(inputs_of_all(ranks, 1031, torch.float64), dist.ReduceOp.SUM),
                "future then")
    barrier = dist.barrier(async_op=True)
    barrier.wait()
    check.true(barrier.is_completed(), "barrier completed")


def test_subgroups(check, rank, ranks):
    """new_group: a communicator of its own per group; ranks outside it are not members."""
    groups = [list(range(ranks)), [0, ranks - 1], [ranks - 1]]
    if ranks > 2:
        groups.append([1, 2])
    for members in groups:
        group = dist.new_group(members)  # every rank calls new_group, members or not
        if rank not in members:
            check.true(group == dist.GroupMember.NON_GROUP_MEMBER, f"rank outside {members} is not a member")
            continue
        check.true(dist.get_rank(group) == members.index(rank), f"rank in group {members}")
        for dtype in (torch.float32, torch.int64):
            tensor = rank_input(rank, 1031, dtype)
            dist.all_reduce(tensor, group=group)
            check.equal(tensor, reduce_reference([rank_input(m, 1031, dtype) for m in members], dist.ReduceOp.SUM),
                        f"all_reduce in group {members} {dtype}")
            outputs = [poisoned(13, dtype) for _ in members]
            dist.all_gather(outputs, rank_input(rank, 13, dtype), group=group)
            for i, m in enumerate(members):
                check.equal(outputs[i], rank_input(m, 13, dtype), f"all_gather in group {members} {dtype}")
            root = members[-1]  # a global rank, as torch.distributed takes it
            tensor = rank_input(rank, 40009, dtype) if rank == root else poisoned(40009, dtype)
            dist.broadcast(tensor, src=root, group=group)
            check.equal(tensor, rank_input(root, 40009, dtype), f"broadcast in group {members} {dtype}")
        dist.barrier(group=group)


def main():
    dist.init_process_group("collective")
    rank, ranks = dist.get_rank(), dist.get_world_size()
    check = Checker()
    for test in (test_all_reduce, test_broadcast, test_reduce, test_all_gather, test_reduce_scatter,
                 test_gather_scatter, test_all_to_all, test_point_to_point, test_noncontiguous, test_bool,
                 test_async_order, test_subgroups):
        test(check, rank, ranks)
        print(f"rank {rank}: {test.__name__} ok", flush=True)
    dist.barrier()
    dist.destroy_process_group()
    check.summary(f"test_ops ({ranks} ranks)")


if __name__ == "__main__":
    main()
