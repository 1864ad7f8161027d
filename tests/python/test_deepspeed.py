"""DeepSpeed's own ZeRO engine (stages 1, 2 and 3) trains on the "collective" backend exactly as it
does on gloo.

    python3 tests/python/test_deepspeed.py [--ranks 2 3] [--collrun PATH]          (the driver)

The driver launches this script under collrun twice per rank count, once with each backend:

    collrun -n N python3 test_deepspeed.py --backend gloo|collective --out FILE    (a worker)

Each worker starts DeepSpeed on the CPU (DS_ACCELERATOR=cpu) with
`deepspeed.init_distributed(dist_backend=BACKEND)`, and then, for each case, builds a fresh MLP
with the same seed and trains it with `deepspeed.initialize` on the same fixed data: gradient
accumulation, clipping, overlap_comm and buckets smaller than a layer, so that DeepSpeed splits
its reductions and (stage 3) its parameter gathers. It writes every rank's loss at every
micro-step, and the loss on a fixed evaluation batch before and after training, to FILE.rankR.

The driver then checks, for every case, rank and micro-step, that the two backends' losses agree
within RTOL (see there), and that the run trained: the evaluation loss fell below half its
starting value, and the last training losses are below the first. Two processes rather than one
process with two groups: DeepSpeed keeps its communication backend and process groups in module
globals, so one process serves one backend.

Exit status 0: passed; 1: failed; 77: skipped (DeepSpeed is not installed).
"""
import argparse
import faulthandler
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

SKIP = 77

# Cases: (ZeRO stage, dtype). bf16 runs DeepSpeed's bf16 optimizer (fp32 master weights) on the
# CPU; its reductions are in bf16.
CASES = [(1, "fp32"), (2, "fp32"), (3, "fp32"), (2, "bf16"), (3, "bf16")]

MICRO_BATCH = 4
ACCUMULATION = 2
STEPS = 10                       # optimizer steps; ACCUMULATION micro-steps each
IN, HIDDEN, OUT = 32, 64, 8      # 6,792 parameters in layers of 2,112, 4,160 and 520

# Gloo and libcollective sum the same per-rank values, so the only possible difference is the order
# of the additions: on 2 ranks a + b == b + a (bit-identical), on 3 ranks (a + b) + c may differ
# from a + (b + c) by one rounding, ~6e-8 relative in fp32. Ten Adam steps carry that into the
# losses at ~1e-7; 1e-5 relative is 100 times that, and 10^4 times smaller than what training
# changes (the evaluation loss must halve). bf16 reductions round to 8 bits of mantissa (~4e-3
# relative per rounding), so there one rounding's difference, carried through the steps, is allowed.
RTOL = {"fp32": 1e-5, "bf16": 2e-2}
ATOL = {"fp32": 1e-7, "bf16": 1e-3}


# -- the worker (one rank of one backend, under collrun) ---------------------------------------------

def make_model(torch):
    nn = torch.nn
    torch.manual_seed(1234)
    return nn.Sequential(nn.Linear(IN, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, HIDDEN), nn.Tanh(),
                         nn.Linear(HIDDEN, OUT))


def teacher_targets(torch, inputs):
    """What the student learns: a fixed random linear map plus a nonlinearity of the inputs."""
    generator = torch.Generator().manual_seed(99)
    weight = torch.randn(IN, OUT, generator=generator) / IN ** 0.5
    return torch.tanh(inputs @ weight) + 0.1 * inputs[:, :OUT]


def global_batch(torch, step, samples):
    generator = torch.Generator().manual_seed(1000 + step)
    inputs = torch.randn(samples, IN, generator=generator)
    return inputs, teacher_targets(torch, inputs)


def ds_config(stage, dtype):
    return {
        "train_micro_batch_size_per_gpu": MICRO_BATCH,
        "gradient_accumulation_steps": ACCUMULATION,
        "gradient_clipping": 1.0,
        "steps_per_print": 1_000_000,
        # torch_adam: torch.optim.AdamW. Without it DeepSpeed builds its FusedAdam op, for CUDA.
        "optimizer": {"type": "AdamW", "params": {"lr": 0.01, "weight_decay": 0.01, "torch_adam": True}},
        "bf16": {"enabled": dtype == "bf16"},
        "zero_optimization": {
            "stage": stage,
            "overlap_comm": True,
            "contiguous_gradients": True,
            "reduce_bucket_size": 2000,          # smaller than the two big layers
            "allgather_bucket_size": 2000,
            "stage3_prefetch_bucket_size": 2000,
            "stage3_max_live_parameters": 5000,
            "stage3_param_persistence_threshold": 100,   # the biases stay gathered, the weights do not
        },
    }


def train_case(torch, deepspeed, stage, dtype, ranks, rank):
    import torch.nn.functional as F

    model = make_model(torch)
    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(),
                                           config=ds_config(stage, dtype))
    model_dtype = torch.bfloat16 if dtype == "bf16" else torch.float32
    eval_inputs, eval_targets = global_batch(torch, -1, 64)

    def evaluate():
        engine.eval()
        with torch.no_grad():
            loss = F.mse_loss(engine(eval_inputs.to(model_dtype)).float(), eval_targets).item()
        engine.train()
        return loss

    eval_before = evaluate()
    losses = []
    for step in range(STEPS):
        inputs, targets = global_batch(torch, step, MICRO_BATCH * ranks * ACCUMULATION)
        for micro in range(ACCUMULATION):
            first = (micro * ranks + rank) * MICRO_BATCH
            x, y = inputs[first:first + MICRO_BATCH], targets[first:first + MICRO_BATCH]
            loss = F.mse_loss(engine(x.to(model_dtype)).float(), y)
            engine.backward(loss)
            engine.step()
            losses.append(loss.item())
    if engine.global_steps != STEPS:
        raise SystemExit(f"rank {rank}: stage {stage} {dtype}: DeepSpeed took {engine.global_steps} steps, "
                         f"expected {STEPS}")
    return {"losses": losses, "eval_before": eval_before, "eval_after": evaluate()}


def worker(args):
    # An abort anywhere in the run prints where every thread of the interpreter was.
    faulthandler.enable()
    os.environ.setdefault("DS_ACCELERATOR", "cpu")
    import torch

    torch.set_num_threads(1)
    import torch.distributed as dist
    import torch_collective  # noqa: F401  (registers the "collective" backend)
    import deepspeed

    deepspeed.init_distributed(dist_backend=args.backend)
    if dist.get_backend() != args.backend:
        raise SystemExit(f"DeepSpeed started backend {dist.get_backend()!r}, expected {args.backend!r}")
    ranks, rank = dist.get_world_size(), dist.get_rank()
    results = {}
    for stage, dtype in CASES:
        started = time.perf_counter()
        results[f"{stage}-{dtype}"] = train_case(torch, deepspeed, stage, dtype, ranks, rank)
        results[f"{stage}-{dtype}"]["seconds"] = time.perf_counter() - started
    with open(f"{args.out}.rank{rank}", "w") as file:
        json.dump({"backend": args.backend, "ranks": ranks, "results": results}, file)
    dist.barrier()
    # torch 2.x may abort at exit ("terminate called without an active exception") when a group
    # that ran collectives is still alive, with gloo as with any backend.
    dist.destroy_process_group()
    # DeepSpeed keeps its own references to the groups (deepspeed.comm's module globals), so they
    # are destroyed only while the interpreter shuts down, where gloo's can abort the same way: it
    # did once in CI, in a gloo run, and not in 16 runs since (pytorch/pytorch#179291 describes
    # the teardown). The results are on disk by now; leave without the interpreter's teardown.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


# -- the driver -----------------------------------------------------------------------------------------

def find_collrun(explicit):
    """--collrun, $COLLRUN, the build tree's tools/collrun/collrun or the install prefix's bin/collrun
    next to the torch_collective package in use, or collrun on PATH."""
    if explicit:
        return explicit
    if os.environ.get("COLLRUN"):
        return os.environ["COLLRUN"]
    try:
        import importlib.util

        spec = importlib.util.find_spec("torch_collective")
        package = os.path.dirname(spec.origin) if spec and spec.origin else None
    except ImportError:
        package = None
    if package:
        parent = os.path.dirname(package)                     # build/python or P/lib/python
        for candidate in (os.path.join(os.path.dirname(parent), "tools", "collrun", "collrun"),
                          os.path.join(os.path.dirname(os.path.dirname(parent)), "bin", "collrun")):
            if os.access(candidate, os.X_OK):
                return candidate
    return shutil.which("collrun")


def launch(collrun, ranks, backend, out, timeout):
    command = [collrun, "-n", str(ranks), "--tag-output", sys.executable, os.path.abspath(__file__),
               "--backend", backend, "--out", out]
    env = dict(os.environ, DS_ACCELERATOR="cpu", OMP_NUM_THREADS="1")
    env.setdefault("COLL_TIMEOUT_MS", "60000")
    started = time.perf_counter()
    try:
        result = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                timeout=timeout)
    except subprocess.TimeoutExpired as error:
        return False, f"timed out after {timeout} s\n{(error.stdout or '')[-4000:]}", time.perf_counter() - started
    return result.returncode == 0, result.stdout, time.perf_counter() - started


def relative_difference(a, b):
    return abs(a - b) / max(abs(a), abs(b), 1e-30)


def compare(ranks, gloo, collective):
    """Failures (strings) of one rank count; prints one line per case."""
    failures = []
    for stage, dtype in CASES:
        case = f"{stage}-{dtype}"
        rtol, atol = RTOL[dtype], ATOL[dtype]
        worst, where = 0.0, None
        for rank in range(ranks):
            expected, actual = gloo[rank]["results"][case], collective[rank]["results"][case]
            pairs = list(zip(expected["losses"], actual["losses"])) + [(expected["eval_after"], actual["eval_after"])]
            if len(expected["losses"]) != len(actual["losses"]):
                failures.append(f"{ranks} ranks, stage {stage} {dtype}: {len(actual['losses'])} losses on collective, "
                                f"{len(expected['losses'])} on gloo")
            for index, (a, b) in enumerate(pairs):
                excess = abs(a - b) / (atol + rtol * abs(a))
                if excess > worst:
                    worst, where = excess, (rank, index, a, b)
        ok = worst <= 1.0
        result = collective[0]["results"][case]
        losses = result["losses"]
        first, last = sum(losses[:ACCUMULATION]), sum(losses[-ACCUMULATION:])
        trained = result["eval_after"] < 0.5 * result["eval_before"] and last < first
        detail = ""
        if where:
            rank, index, a, b = where
            step = "eval" if index == len(losses) else f"micro-step {index}"
            detail = f"; largest difference rank {rank} {step}: gloo {a:.9g} collective {b:.9g}"
        print(f"{ranks} ranks, stage {stage} {dtype}: {'PASS' if ok and trained else 'FAIL'}: losses agree with "
              f"gloo to {worst:.3f} of the tolerance (rtol {rtol}, atol {atol}){detail}; eval loss "
              f"{result['eval_before']:.4f} -> {result['eval_after']:.4f}; "
              f"{result['seconds']:.1f} s on collective, {gloo[0]['results'][case]['seconds']:.1f} s on gloo",
              flush=True)
        if not ok:
            failures.append(f"{ranks} ranks, stage {stage} {dtype}: losses differ from gloo's beyond the tolerance")
        if not trained:
            failures.append(f"{ranks} ranks, stage {stage} {dtype}: did not train (eval loss {result['eval_before']:.4f}"
                            f" -> {result['eval_after']:.4f}, first micro-steps {first:.4f}, last {last:.4f})")
    return failures


def prebuild_shm_op():
    """DeepSpeed JIT-compiles its CPU shared-memory op (deepspeed_shm_comm) at its first
    init_distributed, in every rank at once, into one cache (a minute or more the first time).
    Ranks that found another rank compiling have ended in "terminate called without an active
    exception"; compiling it here first, in one process, leaves the ranks only loading it."""
    started = time.perf_counter()
    code = ("from deepspeed.accelerator import get_accelerator\n"
            "builder = get_accelerator().create_op_builder('ShareMemCommBuilder')\n"
            "builder is not None and builder.load(verbose=False)\n")
    result = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, DS_ACCELERATOR="cpu"),
                            capture_output=True, text=True)
    if result.returncode != 0:
        print(f"note: DeepSpeed's shm op did not build ({result.stderr.strip()[-300:]}); the ranks will try",
              flush=True)
    else:
        print(f"DeepSpeed's CPU shm op ready in {time.perf_counter() - started:.1f} s", flush=True)


def driver(args):
    try:
        import deepspeed  # noqa: F401
    except ImportError as error:
        print(f"SKIP: DeepSpeed is not installed ({error})")
        return SKIP
    collrun = find_collrun(args.collrun)
    if not collrun:
        print("FAIL: collrun not found: pass --collrun or set COLLRUN", file=sys.stderr)
        return 1
    prebuild_shm_op()
    failures = []
    with tempfile.TemporaryDirectory(prefix="coll-deepspeed-") as work:
        for ranks in args.ranks:
            outputs = {}
            for backend in ("gloo", "collective"):
                out = os.path.join(work, f"{backend}-{ranks}")
                ok, log, seconds = launch(collrun, ranks, backend, out, args.timeout)
                print(f"{ranks} ranks, {backend}: {'ran' if ok else 'FAILED'} in {seconds:.1f} s", flush=True)
                if not ok:
                    print(log[-6000:], flush=True)
                    failures.append(f"{ranks} ranks, {backend}: the run failed")
                    break
                outputs[backend] = []
                for rank in range(ranks):
                    with open(f"{out}.rank{rank}") as file:
                        outputs[backend].append(json.load(file))
            if len(outputs) == 2:
                failures += compare(ranks, outputs["gloo"], outputs["collective"])
    for failure in failures:
        print(f"FAILED: {failure}", file=sys.stderr)
    print("test_deepspeed: " + ("FAILED" if failures else "passed"), flush=True)
    return 1 if failures else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--ranks", type=int, nargs="+", default=[2, 3], help="rank counts (default 2 3)")
    parser.add_argument("--collrun", help="the collrun launcher (default: found next to torch_collective)")
    parser.add_argument("--timeout", type=int, default=300, help="seconds per launch (default 300)")
    parser.add_argument("--backend", choices=["gloo", "collective"], help="worker mode: this rank's backend")
    parser.add_argument("--out", help="worker mode: write the losses to OUT.rankR")
    args = parser.parse_args()
    if args.backend:
        if not args.out:
            parser.error("--backend needs --out")
        worker(args)
        return 0
    if "RANK" in os.environ and int(os.environ.get("WORLD_SIZE", "1")) > 1:
        parser.error("run the driver as one process (it launches the ranks itself), or pass --backend and --out")
    return driver(args)


if __name__ == "__main__":
    sys.exit(main())
