"""The collectives that compare.py measures, and what a "size" means for each: one table shared by
compare.py, its report and the Gloo benchmark, so that every library is given the same amount of
data per call and its bus bandwidth is computed with the same factor.

Sizes follow our *_perf programs and nccl-tests: the size is the bytes of the larger of a rank's
two buffers (the root's, for gather and scatter), rounded down to whole float32 elements and, for
the collectives that split their buffer into one block per rank, to a multiple of the rank count.
mpi_bench.c carries the same rules in C (its `kColls` table); keep the two in step.
"""
from collections import namedtuple

ELEMENT = 4  # float32 everywhere

# split: the size is n blocks, one per rank. factor: busbw = algbw * factor(n), as nccl-tests.
# mpi / gloo: the call each library makes (None: the library has no such operation).
Collective = namedtuple("Collective", "name split factor factor_text size_means mpi gloo")


def _one(n):
    return 1.0


def _blocks(n):
    return (n - 1) / n


def _twice(n):
    return 2.0 * (n - 1) / n


COLLECTIVES = {c.name: c for c in (
    Collective("all_reduce", False, _twice, "2(n-1)/n", "each rank's buffer",
               "MPI_Allreduce", "all_reduce (in place)"),
    Collective("all_gather", True, _blocks, "(n-1)/n", "the whole output; each rank contributes size/n",
               "MPI_Allgather", "all_gather into n views of one tensor"),
    Collective("alltoall", True, _blocks, "(n-1)/n", "each rank's buffer, n blocks of size/n",
               "MPI_Alltoall", "all_to_all_single"),
    Collective("broadcast", False, _one, "1", "the root's buffer", "MPI_Bcast (in place)", "broadcast (in place)"),
    Collective("gather", True, _blocks, "(n-1)/n", "the root's whole output; each rank sends size/n",
               "MPI_Gather", "gather into a list of n views"),
    Collective("reduce", False, _one, "1", "each rank's buffer", "MPI_Reduce", "reduce (in place)"),
    Collective("reduce_scatter", True, _blocks, "(n-1)/n", "each rank's whole input; each rank ends with size/n",
               "MPI_Reduce_scatter_block", None),
    Collective("scatter", True, _blocks, "(n-1)/n", "the root's whole input; each rank receives size/n",
               "MPI_Scatter", "scatter from a list of n views"),
    Collective("sendrecv", False, _one, "1", "the buffer each rank sends to rank+1 while receiving from rank-1",
               "MPI_Sendrecv", "isend + irecv"),
    # Variable counts: the size splits between ranks by --counts (perf_counts.h; mpi_bench.c's
    # splitCounts), the blocks adding up to it, so no rounding to whole blocks.
    Collective("allgatherv", False, _blocks, "(n-1)/n", "the whole output; rank p contributes its --counts share",
               "MPI_Allgatherv", None),
    Collective("alltoallv", False, _blocks, "(n-1)/n",
               "each rank's buffer; the block to rank q is share (rank+q) mod n of --counts",
               "MPI_Alltoallv", None),
    Collective("reducescatterv", False, _blocks, "(n-1)/n", "each rank's whole input; rank p ends with its share",
               "MPI_Reduce_scatter", None),
)}

ROOTED = ("broadcast", "gather", "reduce", "scatter")  # root 0 in every library
REDUCING = ("all_reduce", "reduce", "reduce_scatter", "reducescatterv")  # sum in every library
VARIABLE = ("allgatherv", "alltoallv", "reducescatterv")  # split by --counts in every library
COUNT_PATTERNS = ("even", "linear", "zeros", "one")

# Why a library lacks an operation, for the tables.
MISSING = {("gloo", "reduce_scatter"): "torch.distributed's Gloo backend has no reduce_scatter "
                                       "(\"ProcessGroupGloo does not support reduce_scatter\")",
           ("gloo", "reducescatterv"): "torch.distributed's Gloo backend has no reduce_scatter",
           ("gloo", "allgatherv"): "gloo_bench.py has no uneven all_gather",
           ("gloo", "alltoallv"): "gloo_bench.py has no uneven all_to_all_single"}


def effective_size(name, size, nranks):
    """The bytes actually measured for a requested size: whole elements, whole blocks, at least one
    element per block (so 8 B at 4 ranks becomes 16 B for the split collectives)."""
    unit = ELEMENT * nranks if COLLECTIVES[name].split else ELEMENT
    return max(size // unit, 1) * unit


def block_count(name, size, nranks):
    """(count, per): elements of the larger buffer and of one rank's block."""
    count = effective_size(name, size, nranks) // ELEMENT
    return count, count // nranks if COLLECTIVES[name].split else count


def busbw(name, size, nranks, time_us):
    if time_us <= 0:
        return 0.0
    return size / 1e9 / (time_us * 1e-6) * COLLECTIVES[name].factor(nranks)


def parse_names(text):
    """'all' or a comma-separated list -> names in table order; ValueError names the unknown one."""
    if text.strip() == "all":
        return list(COLLECTIVES)
    names = [t.strip() for t in text.split(",") if t.strip()]
    for t in names:
        if t not in COLLECTIVES:
            raise ValueError(f"unknown collective {t!r}; expected 'all' or some of {','.join(COLLECTIVES)}")
    return [c for c in COLLECTIVES if c in names]
