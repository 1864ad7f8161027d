"""torch's own Flight Recorder sees the collective backend's calls, and its analyzer reads them.

    collrun -n 2 PYTHON tests/python/test_flight_recorder.py      (torch 2.15 and later)

A group served by the collective backend alone records its calls itself (flight_recording.h), in
place of the FlightRecorderHook torch attaches to other backends' groups; where the extension
cannot, the hook records them and the backend retires its entries (completion_hooks.h). Every
rank makes a few collectives, dumps torch's recorder (_dump_fr_trace_file, as torch does on a
failure), and rank 0 runs torch.distributed.flight_recorder's analyzer over the dumps: every
collective must be there, in order, with its sizes, completed on both ranks, and matched across
them with no error. Then a send and a receive, named "send 0->1" and "recv 1<-0" with their sizes;
then a collective only rank 0 calls: the analyzer must find rank 1 missing. Where the extension
records natively, torch's hook must not be attached too (each call would be recorded twice).
Exits 77 (SKIPPED) on torch lines without the hook.
"""
import contextlib
import io
import os
import sys
import time
from datetime import timedelta

os.environ.setdefault("TORCH_FR_BUFFER_SIZE", "200")
DUMPS = f"/tmp/collective-fr-{os.environ.get('MASTER_PORT', 'solo')}"
os.environ["TORCH_FR_DUMP_TEMP_FILE"] = os.path.join(DUMPS, "fr_rank_")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import torch_collective  # noqa: E402,F401

EXPECTED = ["all_reduce", "all_reduce", "broadcast", "all_gather", "reduce_scatter", "barrier"]


def dump(rank):
    # A Work reads completed a moment before its completion hook has retired the hook's entry.
    time.sleep(0.3)
    torch._C._distributed_c10d._dump_fr_trace_file(rank, backend="collective")


def analyze():
    """The analyzer's database and what it printed."""
    from torch.distributed.flight_recorder.components.builder import build_db
    from torch.distributed.flight_recorder.components.config_manager import JobConfig
    from torch.distributed.flight_recorder.components.loader import read_dir

    args = JobConfig().parse_args([DUMPS, "--prefix", "fr_rank_"])
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        details, version = read_dir(args)
        db = build_db(details, args, version)
    return db, printed.getvalue()


def check_all_completed(db, printed):
    names = [c.collective_name.split(":")[-1] for c in db.collectives]
    if names != EXPECTED:
        return [f"the analyzer found collectives {names}, expected {EXPECTED}"]
    failures = []
    states = {c.collective_state for c in db.collectives}
    if states != {"completed"} or not all(c.pass_check for c in db.collectives):
        failures.append(f"collective states {states}, checks {[c.pass_check for c in db.collectives]}: expected "
                        "every one completed and matched")
    if db.collectives[0].input_sizes != [[1000]]:
        failures.append(f"all_reduce input sizes {db.collectives[0].input_sizes}")
    return failures


def check_point_to_point(rank):
    """A send and a receive between ranks 0 and 1 in this rank's own recorder."""
    import json

    tensor = torch.ones(7)
    if rank == 0:
        dist.send(tensor, 1)
    elif rank == 1:
        dist.recv(tensor, 0)
    else:
        return []
    time.sleep(0.3)  # the worker retires an entry just after the Work reads completed
    trace = json.loads(torch._C._distributed_c10d._dump_fr_trace_json(True, False, backend="collective"))
    entries = [e for e in trace.get("entries", []) if e["is_p2p"]]
    expected = "collective:send 0->1" if rank == 0 else "collective:recv 1<-0"
    if [e["profiling_name"] for e in entries] != [expected]:
        return [f"point-to-point entries {[e['profiling_name'] for e in entries]}, expected [{expected!r}]"]
    sizes = entries[0]["input_sizes"] + entries[0]["output_sizes"]
    if sizes != [[7]] or entries[0]["state"] != "completed":
        return [f"the {expected} entry has sizes {sizes} and state {entries[0]['state']}: expected [[7]], completed"]
    return []


def check_one_recorder(pg):
    """Native recording leaves torch's hook off the group."""
    if not torch_collective._C.records_flight_recorder:
        return []
    hooks = dist.distributed_c10d._world.pg_flight_recorder_hooks
    if pg in hooks:
        return ["torch's FlightRecorderHook is attached although the backend records itself"]
    return []


def main():
    if not hasattr(torch._C._distributed_c10d, "FlightRecorderHook"):
        print("SKIPPED: this torch has no FlightRecorderHook for backends that do not record themselves")
        return 77
    dist.init_process_group("collective", timeout=timedelta(seconds=60))
    rank, size = dist.get_rank(), dist.get_world_size()
    os.makedirs(DUMPS, exist_ok=True)
    tensor = torch.ones(1000)
    dist.all_reduce(tensor)
    dist.all_reduce(tensor)
    dist.broadcast(tensor, 0)
    dist.all_gather([torch.zeros(1000) for _ in range(size)], tensor)
    dist.reduce_scatter(torch.zeros(10), [torch.ones(10) for _ in range(size)])
    dist.barrier()
    dump(rank)
    dist.barrier()
    failures = check_one_recorder(dist.group.WORLD)
    if rank == 0:
        db, printed = analyze()
        failures += check_all_completed(db, printed)
    dist.barrier()
    failures += check_point_to_point(rank)
    dist.barrier()
    # A hang: rank 0 enters an all-reduce that rank 1 never calls; both dump while it is pending.
    if rank == 0:
        work = dist.all_reduce(torch.ones(8), async_op=True)
    time.sleep(0.5)
    dump(rank)
    if rank == 0:
        time.sleep(0.5)  # rank 1's dump
        db, _ = analyze()
        named = [c for c in db.collectives if c.missing_ranks and 1 in c.missing_ranks]
        if not named or named[0].collective_name.split(":")[-1] != "all_reduce":
            failures.append("the analyzer did not name rank 1 for the all-reduce it never joined")
        torch_collective.revoke()
        with contextlib.suppress(RuntimeError):
            work.wait()
    for failure in failures:
        print(f"rank {rank}: {failure}", flush=True)
    with contextlib.suppress(RuntimeError):
        dist.destroy_process_group()
    if rank == 0:
        import shutil

        shutil.rmtree(DUMPS, ignore_errors=True)
        if not failures:
            print("the analyzer read every call of the collective backend")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
