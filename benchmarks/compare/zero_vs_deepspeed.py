#!/usr/bin/env python3
"""ZeRO stages 1-3: torch_collective.zero against DeepSpeed's engine on gloo and on "collective".

    PYTHONPATH=build/python/torch2.15 /opt/collective-py/bin/python benchmarks/compare/zero_vs_deepspeed.py \
        --collrun build/tools/collrun/collrun [--ranks 2 3] [--stages 1 2 3] [--device cpu|cuda]
        [--offload none optimizer both] [--bf16] [--largest GIB] [--model mlp|gpt]
        [--steps 12] [--warmups 3] [--width 1024] [--layers 4] [--micro-batch 8] [--json FILE]

For every rank count, stage and offload choice, the driver launches one run per engine under
collrun (one process per rank, so that each run's peak memory is its own), with the same model,
data and DeepSpeed config:

  zero           torch_collective.zero.initialize (our engine) on the "collective" backend;
  ds-gloo        deepspeed.initialize after deepspeed.init_distributed(dist_backend="gloo");
  ds-collective  deepspeed.initialize after deepspeed.init_distributed(dist_backend="collective");
  ds-nccl        the same on "nccl" (CUDA only, and only where every rank has a GPU of its own).

With --device cpu (the default) DeepSpeed runs on its CPU accelerator (DS_ACCELERATOR=cpu) and the
engines are zero, ds-gloo and ds-collective. With --device cuda the model is on the GPU (ranks share
the GPUs there are, rank r on GPU r mod count) and the engines are zero, ds-collective and
ds-nccl. DeepSpeed's optimizer is torch's AdamW ("torch_adam": true) unless --ds-native-adam, which
lets it build and use its own (FusedAdam on the GPU, DeepSpeedCPUAdam with offload; compiled on
first use). --offload: none; optimizer (offload_optimizer.device cpu, stages 1-3); both (and
offload_param.device cpu, stage 3 only). --bf16 trains in bf16 with float32 master weights.

The model (--model) is an MLP of --layers hidden layers of --width (3.4 M parameters by default),
trained with AdamW and clipping on fixed random batches; or "gpt": a GPT-style decoder of --layers
blocks of --width (pre-norm causal attention with heads of 64, a 4x MLP; a vocabulary of 512,
sequences of 64 tokens, --micro-batch sequences per rank) learning next tokens of arithmetic
progressions.

Per stage and rank count it prints a Markdown table:

  max |dloss|   the largest difference, over all steps, between this engine's loss and our
                engine's (the loss of a step is the mean over the ranks of their micro-batch losses);
  final loss    the loss of the last step;
  step ms       the median time of a training step (forward, backward, step), after --warmups
                untimed steps; the largest median over the ranks;
  peak RSS      the process's peak resident set (getrusage ru_maxrss), largest over the ranks:
                everything, Python, torch and DeepSpeed's libraries included;
  RSS growth    peak RSS minus the resident set just before the model was built, after the
                imports, the process group and one warm-up step of the same engine on a
                50-parameter model (which loads what the engine loads lazily): what this model's
                training added, activations and communication buffers included;
  tensors       the bytes of all distinct CPU tensor storages Python can reach after the last
                step, less those before the model was built: the model states this rank holds in
                host memory between steps (parameters, gradients, optimizer state, flat buffers);
  device peak   (CUDA) torch.cuda.max_memory_allocated over the run, less what was allocated
                before the model was built, largest over the ranks; split into the peak of
                building the model and the engine (at setup) and that of the steps, warm-ups
                included (in training), whose larger is the run's;
  device held   (CUDA) what stays allocated on the device between steps, the same way.

Each run prints a RUN line as it ends (flushed, so that a caller's timeout keeps what ran);
--budget SECONDS gives each run at most the time left of it (--timeout otherwise), starts none
where too little is left (MIN_RUN_SECONDS), and the tables name the runs it left out;
--require-deepspeed fails where DeepSpeed does not import instead of running our engine alone.

--largest GIB (CUDA) also finds the largest model that fits in GIB of device memory per rank, for
each engine, stage and offload choice: the run's device peak is linear in --layers at a fixed
width (each layer adds the same parameters, states and activations), so two runs (--layers and
twice that) give the line, the line gives the most layers under nine tenths of GIB (the rest for
what the allocator reserves beyond what it hands out), and a third run at that many layers, with
torch's allocator capped at GIB (torch.cuda.set_per_process_memory_fraction), shows that it fits,
or why not (out of memory, timed out). The second and third runs take two steps each.

It also checks whether our engine's config parser takes DeepSpeed's own example configs and lists
the keys it names as unknown (ignored) or rejects (--configs-only prints just that).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from deepspeed_example_configs import print_config_check
from zero_bench_models import CLASSES, batches, gpt_batches, make_gpt, make_model

ENGINES = ["zero", "ds-gloo", "ds-collective", "ds-nccl"]
DEFAULT_ENGINES = {"cpu": ["zero", "ds-gloo", "ds-collective"], "cuda": ["zero", "ds-collective", "ds-nccl"]}
OFFLOADS = ["none", "optimizer", "both"]
# Under --budget, no run starts with less time than this left: a launch alone takes seconds (design value).
MIN_RUN_SECONDS = 20

# -- the benchmark config, model and data ---------------------------------------------------------------

def bench_config(stage, micro_batch, offload="none", bf16=False, torch_adam=True):
    """One config for every engine: only keys both DeepSpeed and our engine know."""
    config = {
        "train_micro_batch_size_per_gpu": micro_batch,
        "gradient_accumulation_steps": 1,
        "gradient_clipping": 1.0,
        "steps_per_print": 1_000_000,
        "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "betas": [0.9, 0.999], "eps": 1e-8,
                                                  "weight_decay": 0.01, "torch_adam": torch_adam}},
        "zero_optimization": {
            "stage": stage,
            "overlap_comm": True,
            "contiguous_gradients": True,
            "reduce_bucket_size": 1_000_000,
            "allgather_bucket_size": 1_000_000,
            "stage3_prefetch_bucket_size": 1_000_000,
            "stage3_param_persistence_threshold": 10_000,
        },
    }
    if offload in ("optimizer", "both"):
        config["zero_optimization"]["offload_optimizer"] = {"device": "cpu", "pin_memory": True}
    if offload == "both":
        config["zero_optimization"]["offload_param"] = {"device": "cpu", "pin_memory": True}
    if bf16:
        config["bf16"] = {"enabled": True}
    return config


def offload_applies(stage, offload):
    return offload == "none" or (offload == "optimizer" and stage >= 1) or (offload == "both" and stage == 3)


def current_rss():
    with open("/proc/self/statm") as file:
        return int(file.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def peak_rss():
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024    # KiB on Linux


def tensor_bytes(torch):
    """Bytes of the distinct storages of every tensor the garbage collector can see."""
    import gc

    gc.collect()
    seen = {}
    for obj in gc.get_objects():
        try:
            if isinstance(obj, torch.Tensor) and obj.device.type == "cpu" and not obj.is_meta:
                storage = obj.untyped_storage()
                seen[storage.data_ptr()] = max(seen.get(storage.data_ptr(), 0), storage.nbytes())
        except Exception:     # noqa: BLE001  (tensor subclasses, sparse tensors, ...)
            continue
    return sum(seen.values())


# -- the worker: one engine, one stage, one rank ------------------------------------------------------

def worker(args):
    cuda = args.device == "cuda"
    if args.engine != "zero" and not cuda:
        os.environ.setdefault("DS_ACCELERATOR", "cpu")
    import torch

    torch.set_num_threads(1)
    import torch.distributed as dist
    import torch.nn.functional as F
    import torch_collective  # noqa: F401  (registers the "collective" backend)

    device = torch.device("cpu")
    if cuda:
        device = torch.device("cuda", int(os.environ.get("RANK", "0")) % torch.cuda.device_count())
        torch.cuda.set_device(device)
        os.environ["LOCAL_RANK"] = str(device.index)     # where DeepSpeed puts its engine
        if args.memory_cap_gib:
            total = torch.cuda.get_device_properties(device).total_memory
            torch.cuda.set_per_process_memory_fraction(min(1.0, args.memory_cap_gib * 2**30 / total), device)

    if args.engine == "zero":
        from torch_collective import zero

        dist.init_process_group("collective")
    else:
        import deepspeed

        deepspeed.init_distributed(dist_backend=args.engine[len("ds-"):])
    ranks, rank = dist.get_world_size(), dist.get_rank()
    steps = args.warmups + args.steps
    data = gpt_batches(torch, steps, ranks, rank, args.micro_batch) if args.model == "gpt" else \
        batches(torch, steps, ranks, rank, args.micro_batch, args.width)

    data_type = torch.bfloat16 if args.bf16 else torch.float32

    def config_of(micro_batch):
        offload = args.offload[0] if args.offload else "none"
        return bench_config(args.stage, micro_batch, offload, args.bf16, torch_adam=not args.ds_native_adam)

    def initialize(model, config):
        if args.engine == "zero":
            return zero.initialize(model=model, model_parameters=model.parameters(), config=config)[0]
        return deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)[0]

    # What the engine loads lazily on first use, before the baseline, by one step of a 50-parameter
    # model: the first torch.optim.Optimizer imports torch._dynamo (much of the resident set),
    # deepspeed.initialize imports hundreds more modules, the first collectives set
    # up their buffers.
    tiny = initialize(torch.nn.Linear(4, CLASSES).to(device), config_of(2))
    tiny.backward(F.cross_entropy(tiny(torch.zeros(2, 4, device=device, dtype=data_type)).float(),
                                  torch.zeros(2, dtype=torch.long, device=device)))
    tiny.step()
    del tiny
    dist.barrier()
    rss_before, tensors_before = current_rss(), tensor_bytes(torch)
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        device_before = torch.cuda.memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)

    model = (make_gpt if args.model == "gpt" else make_model)(torch, args.width, args.layers).to(device)
    parameters = sum(p.numel() for p in model.parameters())
    engine = initialize(model, config_of(args.micro_batch))
    dist.barrier()
    setup_peak = 0
    if cuda:
        torch.cuda.synchronize()
        setup_peak = torch.cuda.max_memory_allocated(device) - device_before
        # From here on, what training needs (the first steps' lazily made state included), without
        # the setup's transient buffers.
        torch.cuda.reset_peak_memory_stats(device)

    losses, times = [], []
    for inputs, labels in data:
        started = time.perf_counter()
        # DeepSpeed leaves the inputs' dtype to the caller (ours casts them); token ids stay ids.
        inputs = inputs.to(device, data_type) if inputs.is_floating_point() else inputs.to(device)
        outputs = engine(inputs).float()
        loss = F.cross_entropy(outputs.reshape(-1, outputs.shape[-1]), labels.to(device).reshape(-1))
        engine.backward(loss)
        engine.step()
        value = loss.item()
        if cuda:
            torch.cuda.synchronize()
        times.append(time.perf_counter() - started)
        losses.append(value)
    result = {"engine": args.engine, "stage": args.stage, "ranks": ranks, "rank": rank, "parameters": parameters,
              "losses": losses, "step_seconds": statistics.median(times[args.warmups:]),
              "peak_rss": peak_rss(), "rss_before": rss_before,
              "tensor_bytes": tensor_bytes(torch) - tensors_before}
    if cuda:
        train_peak = torch.cuda.max_memory_allocated(device) - device_before
        result["device_peak"] = max(setup_peak, train_peak)
        result["device_setup_peak"] = setup_peak
        result["device_train_peak"] = train_peak
        result["device_held"] = torch.cuda.memory_allocated(device) - device_before
    if args.engine == "zero":
        result["memory_breakdown"] = engine.memory_breakdown()
    with open(f"{args.out}.rank{rank}", "w") as file:
        json.dump(result, file)
    dist.barrier()
    # torch 2.x may abort at exit when a group that ran collectives is still alive (gloo too).
    dist.destroy_process_group()


# -- the driver ---------------------------------------------------------------------------------------------

def find_collrun(explicit):
    if explicit:
        return explicit
    if os.environ.get("COLLRUN"):
        return os.environ["COLLRUN"]
    import importlib.util

    spec = importlib.util.find_spec("torch_collective")
    if spec and spec.origin:
        parent = os.path.dirname(os.path.dirname(spec.origin))          # build/python or P/lib/python
        for candidate in (os.path.join(os.path.dirname(parent), "tools", "collrun", "collrun"),
                          os.path.join(os.path.dirname(os.path.dirname(parent)), "bin", "collrun")):
            if os.access(candidate, os.X_OK):
                return candidate
    return shutil.which("collrun")


def run_one(args, collrun, ranks, stage, engine, work, offload="none", layers=None, memory_cap_gib=0.0,
            quiet_failure=False, steps=None, warmups=None, why=None, timeout=None):
    """Per-rank results of one run, or None when it failed (then why[0] says how, when given:
    "out of memory", "timed out" or "failed")."""
    layers = layers or args.layers
    timeout = args.timeout if timeout is None else timeout
    steps = args.steps if steps is None else steps
    warmups = args.warmups if warmups is None else warmups
    out = os.path.join(work, f"{engine}-{stage}-{ranks}-{offload}-{layers}")
    # collrun stops its ranks itself at the timeout (they run in process groups of their own, which a
    # signal to collrun alone would leave running on the GPU); the subprocess timeout is a backstop.
    command = [collrun, "-n", str(ranks), "--tag-output", "--timeout", str(timeout), sys.executable,
               os.path.abspath(__file__),
               "--engine", engine, "--stage", str(stage), "--out", out, "--steps", str(steps),
               "--warmups", str(warmups), "--width", str(args.width), "--layers", str(layers),
               "--micro-batch", str(args.micro_batch), "--device", args.device, "--offload", offload,
               "--model", args.model,
               "--memory-cap-gib", str(memory_cap_gib)]
    command += ["--bf16"] if args.bf16 else []
    command += ["--ds-native-adam"] if args.ds_native_adam else []
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env.setdefault("COLL_TIMEOUT_MS", "60000")
    if engine != "zero" and args.device == "cpu":
        env["DS_ACCELERATOR"] = "cpu"
    started = time.perf_counter()
    try:
        done = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=timeout + 15)
        ok, log = done.returncode == 0, done.stdout
        timed_out = done.returncode == 124
    except subprocess.TimeoutExpired as error:
        output = error.stdout.decode(errors="replace") if isinstance(error.stdout, bytes) else (error.stdout or "")
        ok, log, timed_out = False, f"timed out after {timeout} s\n{output}", True
    seconds = time.perf_counter() - started
    if why is not None:
        why[:] = ["timed out" if timed_out else "out of memory" if "out of memory" in log.lower() else "failed"]
    cap = f", capped at {memory_cap_gib:g} GiB" if memory_cap_gib else ""
    print(f"  {ranks} ranks, stage {stage}, offload {offload}, {engine}, {layers} layers{cap}: "
          f"{'done' if ok else 'FAILED'} in {seconds:.1f} s", file=sys.stderr, flush=True)
    if not ok:
        if not quiet_failure:
            print(log[-5000:], file=sys.stderr, flush=True)
        return None
    per_rank = []
    for rank in range(ranks):
        with open(f"{out}.rank{rank}") as file:
            per_rank.append(json.load(file))
    return per_rank


def summarize(per_rank):
    steps = len(per_rank[0]["losses"])
    summary = {
        "losses": [sum(r["losses"][i] for r in per_rank) / len(per_rank) for i in range(steps)],
        "step_ms": max(r["step_seconds"] for r in per_rank) * 1000,
        "peak_rss_mib": max(r["peak_rss"] for r in per_rank) / 2**20,
        "rss_growth_mib": max(r["peak_rss"] - r["rss_before"] for r in per_rank) / 2**20,
        "tensor_mib": max(r["tensor_bytes"] for r in per_rank) / 2**20,
        "parameters": per_rank[0]["parameters"],
        "memory_breakdown": per_rank[0].get("memory_breakdown"),
    }
    if "device_peak" in per_rank[0]:
        for key in ("device_peak", "device_setup_peak", "device_train_peak", "device_held"):
            summary[f"{key}_mib"] = max(r[key] for r in per_rank) / 2**20
    return summary


def print_table(ranks, results, engines, args):
    """results: {(stage, offload): {engine: summary, or a string saying why it did not run}}."""
    parameters = next((s["parameters"] for row in results.values() for s in row.values() if isinstance(s, dict)), 0)
    precision = "bf16 with float32 master weights" if args.bf16 else "float32"
    print(f"## {ranks} ranks, {args.device}, {args.model} ({parameters:,} parameters, {precision})\n")
    cuda = args.device == "cuda"
    device_columns = (" device peak MiB | at setup | in training | device held MiB |" if cuda else "")
    print("| stage | offload | engine | max abs dloss vs zero | final loss | median step ms | peak RSS MiB | "
          f"RSS growth MiB | tensors MiB |{device_columns}")
    print("| --- " * (13 if cuda else 9) + "|")
    for (stage, offload), row in results.items():
        reference = row.get("zero") if isinstance(row.get("zero"), dict) else None
        for engine in engines:
            summary = row.get(engine)
            if not isinstance(summary, dict):
                print(f"| {stage} | {offload} | {engine} | {summary or 'failed'} |" + " |" * (9 if cuda else 5))
                continue
            diff = (max(abs(a - b) for a, b in zip(summary["losses"], reference["losses"])) if reference
                    else float("nan"))
            device_cells = ""
            if cuda:
                device_cells = (f" {summary['device_peak_mib']:.1f} | {summary['device_setup_peak_mib']:.1f} | "
                                f"{summary['device_train_peak_mib']:.1f} | {summary['device_held_mib']:.1f} |")
            print(f"| {stage} | {offload} | {engine} | {diff:.2e} | {summary['losses'][-1]:.5f} | "
                  f"{summary['step_ms']:.1f} | {summary['peak_rss_mib']:.0f} | {summary['rss_growth_mib']:.1f} | "
                  f"{summary['tensor_mib']:.1f} |{device_cells}")
    print()
    breakdown = {key: row["zero"]["memory_breakdown"] for key, row in results.items()
                 if isinstance(row.get("zero"), dict) and row["zero"]["memory_breakdown"]}
    if breakdown:
        print("Our engine's memory_breakdown() on rank 0, MiB: " + "; ".join(
            f"stage {stage} offload {offload}: " + ", ".join(f"{k} {v / 2**20:.1f}" for k, v in b.items())
            for (stage, offload), b in breakdown.items()))
        print()


def largest_model(args, collrun, ranks, stage, offload, engine, work, first, run_timeout):
    """(layers, parameters, fits) of the largest model under args.largest GiB per rank, from the
    device peak of `first` (a run at args.layers) and of a run at twice the layers; None when a run
    failed."""
    if not isinstance(first, dict):
        return None
    # Memory is all these runs measure: two steps each (the first untimed).
    timeout = run_timeout()
    if timeout is None:
        return None
    second = run_one(args, collrun, ranks, stage, engine, work, offload, layers=2 * args.layers, steps=1, warmups=1,
                     timeout=timeout)
    if second is None:
        return None
    low, high = first["device_peak_mib"], second["device_peak_mib"]
    per_layer = (high - low) / args.layers
    if per_layer <= 0:
        return None
    # A tenth of the cap is left for what the allocator reserves beyond what it hands out.
    layers = int((0.9 * args.largest * 1024 - (low - per_layer * args.layers)) // per_layer)
    if layers < 1:
        return 0, 0, "NO (not one layer fits)"
    parameters = first["parameters"] + (layers - args.layers) * (second["parameters"] - first["parameters"]) // \
        args.layers
    why = []
    timeout = run_timeout()
    if timeout is None:
        return layers, parameters, "not run: --budget spent"
    check = run_one(args, collrun, ranks, stage, engine, work, offload, layers=layers,
                    memory_cap_gib=args.largest, quiet_failure=True, steps=1, warmups=1, why=why, timeout=timeout)
    return layers, parameters, "yes" if check is not None else f"NO ({why[0]})"


def print_largest(ranks, largest, args):
    print(f"## Largest model in {args.largest:g} GiB of device memory per rank, {ranks} ranks "
          f"(width {args.width}, layers found from two measured runs, then run under the cap)\n")
    print("| stage | offload | engine | layers | parameters | ran under the cap |")
    print("| --- | --- | --- | --- | --- | --- |")
    for (stage, offload, engine), found in largest.items():
        if found is None:
            print(f"| {stage} | {offload} | {engine} | failed | | |")
        else:
            layers, parameters, fits = found
            print(f"| {stage} | {offload} | {engine} | {layers} | {parameters / 1e6:.1f} M | {fits} |")
    print()


def print_progress(ranks, stage, offload, engine, summary):
    """One line per run as it ends, flushed: what a run stopped by its caller's timeout still shows."""
    if not isinstance(summary, dict):
        print(f"RUN {ranks} ranks stage {stage} offload {offload} {engine}: {summary}", flush=True)
        return
    device = (f", device peak {summary['device_peak_mib']:.1f} MiB (setup {summary['device_setup_peak_mib']:.1f}, "
              f"training {summary['device_train_peak_mib']:.1f}), held {summary['device_held_mib']:.1f}"
              if "device_peak_mib" in summary else "")
    print(f"RUN {ranks} ranks stage {stage} offload {offload} {engine}: step {summary['step_ms']:.1f} ms, "
          f"final loss {summary['losses'][-1]:.5f}{device}", flush=True)


def why_not(engine, ranks, args):
    """Why an engine cannot run here, or None."""
    if engine == "ds-nccl":
        if args.device != "cuda":
            return "NCCL needs --device cuda"
        import torch

        gpus = torch.cuda.device_count()
        if ranks > gpus:
            return f"cannot run: NCCL takes one rank per GPU ({ranks} ranks, {gpus} GPU(s))"
    if engine == "ds-gloo" and args.device == "cuda":
        return "not run on CUDA: Gloo has no reduce-scatter of CUDA tensors"
    return None


def driver(args):
    print_config_check()
    if args.configs_only:
        return 0
    collrun = find_collrun(args.collrun)
    if not collrun:
        print("collrun not found: pass --collrun or set COLLRUN", file=sys.stderr)
        return 1
    if args.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            print(f"--device cuda: torch {torch.__version__} sees no CUDA device here", file=sys.stderr)
            return 1
    engines = args.engines or DEFAULT_ENGINES[args.device]
    offloads = args.offload or (["none", "optimizer", "both"] if args.device == "cuda" else ["none"])
    if any(e != "zero" for e in engines):
        try:
            import deepspeed  # noqa: F401
        except ImportError as error:
            if args.require_deepspeed:
                print(f"DeepSpeed does not import ({error}), and --require-deepspeed", file=sys.stderr)
                return 1
            print(f"DeepSpeed is not installed ({error}): only the zero engine runs", file=sys.stderr)
            engines = ["zero"]
    everything, failed = {}, False
    started = time.perf_counter()

    def run_timeout():
        """The timeout of the next run: --timeout, or less so that the run (and the 15 s its launcher
        may take beyond it) ends inside --budget; None where less than MIN_RUN_SECONDS would be left."""
        if not args.budget:
            return args.timeout
        left = args.budget - (time.perf_counter() - started) - 15
        return min(args.timeout, int(left)) if left >= MIN_RUN_SECONDS else None

    with tempfile.TemporaryDirectory(prefix="coll-zero-vs-ds-") as work:
        for ranks in args.ranks:
            results, largest = {}, {}
            for stage in args.stages:
                for offload in offloads:
                    if not offload_applies(stage, offload):
                        continue
                    row = results[(stage, offload)] = {}
                    for engine in engines:
                        reason = why_not(engine, ranks, args)
                        if reason:
                            row[engine] = reason
                            continue
                        timeout = run_timeout()
                        if timeout is None:
                            row[engine] = f"not run: --budget {args.budget} s spent"
                            failed = True
                            continue
                        why = []
                        per_rank = run_one(args, collrun, ranks, stage, engine, work, offload, why=why, timeout=timeout)
                        row[engine] = summarize(per_rank) if per_rank else f"failed ({why[0]})"
                        failed |= per_rank is None
                        print_progress(ranks, stage, offload, engine, row[engine])
                        if args.largest and args.device == "cuda":
                            largest[(stage, offload, engine)] = largest_model(args, collrun, ranks, stage, offload,
                                                                              engine, work, row[engine], run_timeout)
            print_table(ranks, results, engines, args)
            if largest:
                print_largest(ranks, largest, args)
            everything[ranks] = {f"stage {stage} offload {offload}": row for (stage, offload), row in results.items()}
            everything[ranks]["largest"] = {f"stage {k[0]} offload {k[1]} {k[2]}": v for k, v in largest.items()}
    print(f"Total {time.perf_counter() - started:.0f} s; steps {args.steps} timed after {args.warmups} warm-ups, "
          f"micro-batch {args.micro_batch} per rank, torch threads 1 per rank.")
    if args.json:
        with open(args.json, "w") as file:
            json.dump({str(k): v for k, v in everything.items()}, file, indent=1)
    return 1 if failed else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--ranks", type=int, nargs="+", default=[2, 3], help="rank counts (default 2 3)")
    parser.add_argument("--stages", type=int, nargs="+", default=[1, 2, 3], choices=[0, 1, 2, 3],
                        help="ZeRO stages (default 1 2 3)")
    parser.add_argument("--engines", nargs="+", choices=ENGINES,
                        help="default: zero ds-gloo ds-collective on the CPU, zero ds-collective ds-nccl on CUDA")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu", help="where the model is (default cpu)")
    parser.add_argument("--offload", nargs="+", choices=OFFLOADS,
                        help="offload choices (default: none on the CPU, none optimizer both on CUDA)")
    parser.add_argument("--bf16", action="store_true", help="train in bf16 with float32 master weights")
    parser.add_argument("--model", choices=["mlp", "gpt"], default="mlp",
                        help="an MLP (default) or a GPT-style decoder (see above)")
    parser.add_argument("--ds-native-adam", action="store_true",
                        help="DeepSpeed's own Adam (FusedAdam, DeepSpeedCPUAdam), compiled on first use")
    parser.add_argument("--largest", type=float, default=0.0, metavar="GIB",
                        help="(CUDA) also find the largest model that fits in GIB of device memory per rank")
    parser.add_argument("--steps", type=int, default=12, help="timed steps (default 12)")
    parser.add_argument("--warmups", type=int, default=3, help="untimed steps first (default 3)")
    parser.add_argument("--width", type=int, default=1024, help="hidden width (default 1024)")
    parser.add_argument("--layers", type=int, default=4, help="hidden layers (default 4: 3.4 M parameters)")
    parser.add_argument("--micro-batch", type=int, default=8, help="samples per rank and step (default 8)")
    parser.add_argument("--collrun", help="the collrun launcher (default: found next to torch_collective)")
    parser.add_argument("--timeout", type=int, default=300, help="seconds per run (default 300)")
    parser.add_argument("--budget", type=int, default=0, metavar="SECONDS",
                        help="start no run that could end after SECONDS from the start (default: no limit); "
                             "the runs left out are named in the tables")
    parser.add_argument("--require-deepspeed", action="store_true",
                        help="fail when DeepSpeed does not import (default: run our engine alone)")
    parser.add_argument("--json", help="also write the results to this file")
    parser.add_argument("--configs-only", action="store_true", help="only check DeepSpeed's example configs")
    parser.add_argument("--engine", choices=ENGINES, help=argparse.SUPPRESS)      # worker mode
    parser.add_argument("--stage", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--memory-cap-gib", type=float, default=0.0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.engine:
        worker(args)
        return 0
    return driver(args)


if __name__ == "__main__":
    sys.exit(main())
