"""Training survives a lost rank, and ends where a run without the loss ends, exactly.

    PYTHON tests/python/test_survive_training.py --trainer ddp|zero2 --fault kill|stop|grow [--seed N]

Starts its own 4 ranks (a launcher would stop the survivors as soon as one rank fails), forked
from this process once it has imported torch (importing torch costs each process seconds of CPU;
the library is loaded only in the ranks, after the fork). Every rank trains a small model on a fixed data order (step s takes global batch s, split evenly over
the ranks) and saves a checkpoint after every step. Rank 2 is lost at a step drawn from the seed:

  kill  SIGKILL. The 3 survivors catch the error, shrink the group (torch_collective.shrink_group:
        torch's own shrink_group on 2.x), agree on the newest checkpoint they all finished, load
        it and train to the end. Then a fresh 3-rank job loads that checkpoint and trains the same
        steps: its final weights must equal the survivors' bit for bit.
  stop  SIGSTOP instead: the survivors' calls time out (the group's timeout), the shrink leaves the
        silent rank out after COLL_AGREE_TIMEOUT_MS, and the rest is as for kill.
  grow  SIGKILL, then a replacement process joins: the survivors shrink (to agree who is left),
        then all four rebuild the default group on a fresh store prefix (as torchft does),
        load the agreed checkpoint and train to the end; the final weights must equal an
        uninterrupted 4-rank run's.

Trainers: torch's DistributedDataParallel with SGD, and our ZeRO stage 2 (torch_collective.zero)
with Adam, whose sharded checkpoints any number of ranks can load.
"""
import argparse
import copy
import os
import random
import signal
import sys
import tempfile
import time
from datetime import timedelta

RANKS = 4
VICTIM = 2
STEPS = 14
GLOBAL_BATCH = 12  # divides evenly over 3 and 4 ranks
# The group's calls time out after this (a stopped rank costs it); every rank is ready before
# init_process_group (init_group), so a slow start on a loaded machine does not count against it.
GROUP_TIMEOUT = timedelta(seconds=6)
# The grown group loses no rank, and its replacement's first steps (loading the checkpoint, cold)
# may take a while on a loaded machine.
GROWN_TIMEOUT = timedelta(seconds=120)
# Both inside ctest's timeout for the test (tests/python/CMakeLists.txt), so that a hang is
# reported by rank here.
READY_SECONDS = 60
DEADLINE_SECONDS = 120


# ---- the training -----------------------------------------------------------------------------

def make_model():
    import torch
    import torch.nn as nn

    torch.manual_seed(11)
    return nn.Sequential(nn.Linear(16, 24), nn.Tanh(), nn.Linear(24, 1))


def batch_of(step, rank, ranks):
    """This rank's share of global batch `step`."""
    import torch

    generator = torch.Generator().manual_seed(500 + step)
    inputs = torch.randn(GLOBAL_BATCH, 16, generator=generator)
    targets = inputs.sum(dim=1, keepdim=True).sin()
    share = GLOBAL_BATCH // ranks
    return inputs[rank * share:(rank + 1) * share], targets[rank * share:(rank + 1) * share]


class DdpTrainer:
    """DDP over the default group; each rank saves its own copy of the (replicated) state.
    attach() and load() are collective (DDP's constructor syncs the ranks); the constructor is not."""

    def __init__(self, checkpoints):
        import torch

        self.checkpoints = checkpoints
        self.module = make_model()
        self.optimizer = torch.optim.SGD(self.module.parameters(), lr=0.05, momentum=0.9)

    def attach(self):
        from torch.nn.parallel import DistributedDataParallel

        self.model = DistributedDataParallel(self.module)

    def step(self, step):
        import torch.distributed as dist
        import torch.nn.functional as F

        inputs, targets = batch_of(step, dist.get_rank(), dist.get_world_size())
        self.optimizer.zero_grad()
        F.mse_loss(self.model(inputs), targets).backward()
        self.optimizer.step()

    def path(self, step, rank):
        return os.path.join(self.checkpoints, f"ddp_step{step}_rank{rank}.pt")

    def save(self, step):
        import torch
        import torch.distributed as dist

        state = {"model": self.module.state_dict(), "optimizer": self.optimizer.state_dict()}
        temporary = self.path(step, dist.get_rank()) + ".tmp"
        torch.save(state, temporary)
        os.replace(temporary, self.path(step, dist.get_rank()))

    def load(self, step, from_rank):
        import torch

        state = torch.load(self.path(step, from_rank))
        self.module.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.attach()

    def weights(self):
        import torch

        return torch.cat([p.detach().flatten() for p in self.module.parameters()])


class Zero2Trainer:
    """Our ZeRO stage 2 engine over the default group, with its sharded checkpoints. attach() and
    load() are collective (the engine starts from rank 0's values); the constructor is not."""

    def __init__(self, checkpoints):
        self.checkpoints = checkpoints

    def attach(self):
        from torch_collective import zero

        config = {"train_micro_batch_size_per_gpu": 1, "optimizer": {"type": "Adam", "params": {"lr": 0.01}},
                  "zero_optimization": {"stage": 2}}
        self.engine, _, _, _ = zero.initialize(model=make_model(), config=config)

    def step(self, step):
        import torch.nn.functional as F

        inputs, targets = batch_of(step, self.engine.rank, self.engine.world_size)
        self.engine.backward(F.mse_loss(self.engine(inputs), targets))
        self.engine.step()

    def save(self, step):
        self.engine.save_checkpoint(self.checkpoints, tag=f"step{step}")

    def load(self, step, from_rank):
        self.attach()
        self.engine.load_checkpoint(self.checkpoints, tag=f"step{step}")

    def weights(self):
        import torch

        return torch.cat([p.detach().flatten() for p in self.engine.full_parameters().values()])


TRAINERS = {"ddp": DdpTrainer, "zero2": Zero2Trainer}


# ---- one rank ---------------------------------------------------------------------------------

def init_group(store_path, prefix, rank, ranks, timeout=GROUP_TIMEOUT):
    """The default group of `ranks` on the store's `prefix`, once all of them are there."""
    import torch.distributed as dist
    import torch_collective  # noqa: F401  (registers the "collective" backend)

    store = dist.PrefixStore(prefix, dist.FileStore(store_path, -1))
    store.add("ready", 1)
    deadline = time.monotonic() + READY_SECONDS
    while store.add("ready", 0) < ranks:
        if time.monotonic() > deadline:
            raise RuntimeError(f"rank {rank}: the other ranks of '{prefix}' did not start in {READY_SECONDS} s")
        time.sleep(0.05)
    dist.init_process_group("collective", store=store, rank=rank, world_size=ranks, timeout=timeout)


def agree_on_checkpoint(done):
    """The newest checkpoint every rank finished (a rank may be one step ahead of another)."""
    import torch
    import torch.distributed as dist

    newest = torch.tensor([done], dtype=torch.int64)
    dist.all_reduce(newest, op=dist.ReduceOp.MIN)
    return int(newest.item())


def train(trainer, first_step, last_step=STEPS):
    done = first_step - 1
    for step in range(first_step, last_step):
        trainer.step(step)
        trainer.save(step)
        done = step
    return done


def rank_main(args):
    import torch
    import torch.distributed as dist
    import torch_collective

    torch.set_num_threads(1)
    rank = args.rank
    if args.replacement:
        return replacement_main(args)
    init_group(args.store, "job", rank, args.ranks)
    trainer = TRAINERS[args.trainer](args.checkpoints)
    if args.resume >= 0:  # a reference run from a checkpoint
        trainer.load(args.resume, 0)
        train(trainer, args.resume + 1)
        return finish(args, trainer, args.resume)
    trainer.attach()
    done = -1
    try:
        for step in range(STEPS):
            if rank == VICTIM and step == args.death_step:
                os.kill(os.getpid(), signal.SIGSTOP if args.fault == "stop" else signal.SIGKILL)
            trainer.step(step)
            trainer.save(step)
            done = step
        if args.death_step < STEPS and rank != VICTIM:
            print(f"rank {rank}: trained to the end without noticing rank {VICTIM}", flush=True)
            return 1
        return finish(args, trainer, -1)
    except RuntimeError as error:
        print(f"rank {rank} caught after step {done}: {str(error)[:300]}", flush=True)
    started = time.monotonic()
    torch_collective.shrink_group()
    print(f"rank {rank}: shrunk to rank {dist.get_rank()} of {dist.get_world_size()} in "
          f"{time.monotonic() - started:.2f} s", flush=True)
    resume = agree_on_checkpoint(done)
    if args.fault == "grow":
        # The survivors know who they are; the replacement takes the last rank.
        new_rank = dist.get_rank()
        dist.destroy_process_group()
        init_group(args.store, "grown", new_rank, RANKS, GROWN_TIMEOUT)
        resume_tensor = torch.tensor([resume], dtype=torch.int64)
        dist.broadcast(resume_tensor, 0)
    trainer.load(resume, rank)
    train(trainer, resume + 1)
    return finish(args, trainer, resume)


def replacement_main(args):
    import torch
    import torch.distributed as dist

    init_group(args.store, "grown", RANKS - 1, RANKS, GROWN_TIMEOUT)
    resume_tensor = torch.tensor([-1], dtype=torch.int64)
    dist.broadcast(resume_tensor, 0)
    resume = int(resume_tensor.item())
    trainer = TRAINERS[args.trainer](args.checkpoints)
    trainer.load(resume, 0)
    train(trainer, resume + 1)
    return finish(args, trainer, resume)


def finish(args, trainer, resume):
    import torch
    import torch.distributed as dist

    weights = trainer.weights()
    if dist.get_rank() == 0:
        torch.save({"weights": weights, "resume": resume}, os.path.join(args.out, "final.pt"))
    dist.destroy_process_group()
    return 0


# ---- the launcher -----------------------------------------------------------------------------

class RankProcess:
    """A rank forked from the launcher, waited for as a subprocess.Popen would be."""

    def __init__(self, pid):
        self.pid = pid
        self.returncode = None

    def wait(self, timeout):
        deadline = time.monotonic() + timeout
        while self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid == self.pid:
                self.returncode = os.waitstatus_to_exitcode(status)  # -N: killed by signal N
            elif time.monotonic() > deadline:
                raise TimeoutError(f"pid {self.pid} still runs")
            else:
                time.sleep(0.05)
        return self.returncode

    def kill(self):
        if self.returncode is None:
            os.kill(self.pid, signal.SIGKILL)
            self.wait(timeout=60)


def start(args, rank, ranks, out, checkpoints, store, resume=-1, replacement=False, death_step=None):
    mine = copy.copy(args)
    mine.rank, mine.ranks, mine.store, mine.out = rank, ranks, store, out
    mine.checkpoints, mine.resume, mine.replacement = checkpoints, resume, replacement
    mine.death_step = args.death_step if death_step is None else death_step
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            code = rank_main(mine)
        except BaseException:
            import traceback

            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code if isinstance(code, int) else 1)  # none of the launcher's cleanup
    return RankProcess(pid)


def run_job(args, ranks, workdir, name, checkpoints, resume=-1, victim_handling=None):
    """A job of `ranks` processes; without `victim_handling` a reference run, where nobody is lost."""
    out = os.path.join(workdir, name)
    os.makedirs(out, exist_ok=True)
    os.makedirs(checkpoints, exist_ok=True)
    store = os.path.join(workdir, f"{name}.store")
    death_step = None if victim_handling else STEPS + 1
    processes = [start(args, r, ranks, out, checkpoints, store, resume, death_step=death_step) for r in range(ranks)]
    if victim_handling:
        processes = victim_handling(processes, out, checkpoints, store)
    deadline = time.monotonic() + DEADLINE_SECONDS
    statuses = {}
    for index, process in enumerate(processes):
        try:
            statuses[index] = process.wait(timeout=max(1, deadline - time.monotonic()))
        except TimeoutError:
            process.kill()
            statuses[index] = "hung"
    return out, statuses


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--trainer", choices=sorted(TRAINERS), required=True)
    parser.add_argument("--fault", choices=["kill", "stop", "grow"], required=True)
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()

    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    args.death_step = random.Random(seed).randrange(2, STEPS - 2)
    print(f"seed {seed}: rank {VICTIM} is lost at step {args.death_step} ({args.fault})", flush=True)
    # Read by the ranks, which inherit them: OpenMP's when torch loads it, the library's at its first
    # communicator.
    os.environ.update(OMP_NUM_THREADS="1", COLL_AGREE_TIMEOUT_MS="3000")
    import torch  # once, here: the ranks are forked with it loaded

    with tempfile.TemporaryDirectory(prefix="collsurvive-") as workdir:
        checkpoints = os.path.join(workdir, "checkpoints")
        os.makedirs(checkpoints)

        def handle_victim(processes, out, checkpoints_dir, store):
            victim = processes[VICTIM]
            if args.fault == "stop":
                # The stopped rank stays stopped until the survivors are done; then it goes.
                for r, p in enumerate(processes):
                    if r != VICTIM:
                        p.wait(timeout=DEADLINE_SECONDS)
                victim.kill()
            elif args.fault == "grow":
                # Started now, it joins once the survivors have shrunk and rebuild the group.
                processes.append(start(args, RANKS - 1, RANKS, out, checkpoints_dir, store, replacement=True))
            return processes

        out, statuses = run_job(args, RANKS, workdir, "faulty", checkpoints, victim_handling=handle_victim)
        expected_dead = {VICTIM: -signal.SIGKILL}
        problems = [f"rank {r}: status {s}" for r, s in statuses.items() if s != 0 and expected_dead.get(r) != s]
        if problems:
            print("the run with the lost rank failed: " + "; ".join(problems), flush=True)
            return 1
        faulty = torch.load(os.path.join(out, "final.pt"))
        resume = faulty["resume"]
        if args.fault == "grow":
            reference_dir, statuses = run_job(args, RANKS, workdir, "uninterrupted",
                                              os.path.join(workdir, "reference-checkpoints"))
        else:
            reference_dir, statuses = run_job(args, RANKS - 1, workdir, "fresh", checkpoints, resume=resume)
        if any(s != 0 for s in statuses.values()):
            print(f"the reference run failed: {statuses}", flush=True)
            return 1
        reference = torch.load(os.path.join(reference_dir, "final.pt"))["weights"]
        if not torch.equal(faulty["weights"], reference):
            difference = (faulty["weights"] - reference).abs().max().item()
            print(f"FAILED: the survivors' weights differ from the reference run's (resumed after step "
                  f"{resume}; largest difference {difference})", flush=True)
            return 1
        print(f"PASSED: resumed after step {resume}; final weights equal the reference run's bit for bit",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
