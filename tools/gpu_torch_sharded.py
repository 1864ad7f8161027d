"""The sharded-training checks of tools/gpu_torch_check.py on CUDA: FSDP2 (fully_shard) and
torch_collective.zero (stages 0-3 with and without offload against Adam on the full batch, a small
GPT-style model in fp32, bf16 and fp16 against one process, checkpoints between a CUDA and a CPU
run). Each check takes torch, torch.distributed, the checker (gpu_torch_check.Checks), this rank
and the rank count, and reports through checks.report; gpu_torch_check.py runs them after its own.
"""


def full_batch_reference(torch, world, per_rank, steps, seeds, clip=0.0):
    """What the sharded runs are checked against: (model, batches, reference). model() builds a
    16-32-4 MLP on GPU 0 from seeds[0]; batches are `steps` global batches from seeds[1]; the
    reference is that model trained alone by Adam (lr 1e-2) on each whole batch, gradients clipped
    to `clip` when it is not 0."""
    cuda = torch.device("cuda", 0)

    def model():
        torch.manual_seed(seeds[0])
        return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 4)).to(cuda)

    generator = torch.Generator().manual_seed(seeds[1])
    batches = [(torch.randn(world * per_rank, 16, generator=generator),
                torch.randn(world * per_rank, 4, generator=generator)) for _ in range(steps)]
    reference = model()
    optimizer = torch.optim.Adam(reference.parameters(), lr=1e-2)
    for x, y in batches:
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(reference(x.to(cuda)), y.to(cuda)).backward()
        if clip:
            torch.nn.utils.clip_grad_norm_(reference.parameters(), clip)
        optimizer.step()
    return model, batches, reference


def run_fsdp2(torch, dist, checks, rank, world):
    """FSDP2 (fully_shard, torch 2.6 and later) on CUDA over the collective backend: each layer
    sharded over all ranks, Adam on each rank's slice of the batch, against full-batch training
    in one process; the full parameters gathered from the shards at the end."""
    try:
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard
    except ImportError as error:
        checks.report("FSDP2 on CUDA", True, f"not run: this torch has no fully_shard ({error})")
        return
    cuda = torch.device("cuda", 0)
    steps, per_rank = 4, 8
    model, batches, reference = full_batch_reference(torch, world, per_rank, steps, (2468, 13))
    mesh = init_device_mesh(cuda.type, (world,))
    sharded = model()
    for index in (0, 2):
        fully_shard(sharded[index], mesh=mesh)
    fully_shard(sharded, mesh=mesh)
    optimizer = torch.optim.Adam(sharded.parameters(), lr=1e-2)
    shard = slice(rank * per_rank, (rank + 1) * per_rank)
    for x, y in batches:
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(sharded(x[shard].to(cuda)), y[shard].to(cuda)).backward()
        optimizer.step()
    gathered = [p.full_tensor() for p in sharded.parameters()]
    worst = max(float((p - q).abs().max()) for p, q in zip(gathered, reference.parameters()))
    checks.report(f"FSDP2 {steps} steps on CUDA = full-batch training", worst <= 1e-5, f"max difference {worst:.2e}")


def run_zero_engine(torch, dist, checks, rank, world):
    """torch_collective.zero on a model on CUDA, stages 0-3 with gradient clipping, 1-3 with the
    optimizer offloaded to the CPU, and 3 with the parameters offloaded (with and without the
    optimizer), against Adam on the full batch in one process (clipped the same way)."""
    from torch_collective import zero

    cuda = torch.device("cuda", 0)
    steps, per_rank = 4, 8
    model, batches, reference = full_batch_reference(torch, world, per_rank, steps, (4321, 5), clip=0.5)
    expected = {name: p.detach().float().cpu() for name, p in reference.named_parameters()}
    shard = slice(rank * per_rank, (rank + 1) * per_rank)
    # Small buckets (many ranges per step) in most cases; stage 2 with overlap_comm (its buckets
    # reduced on the engine's own stream, as stage 3's by default); DeepSpeed's defaults (one bucket:
    # the whole-buffer reduce-scatter) with two micro-steps per step (accumulation into the shard);
    # stage 3 with reduce_scatter off (an all-reduce of which each rank keeps its part); and stage 2
    # offloaded with overlap_comm and two micro-steps (the last one's buckets copied down from the
    # engine's stream as they are reduced), and with reduce_scatter off (copied once kept).
    small_buckets = {"reduce_bucket_size": 100, "allgather_bucket_size": 100}
    cases = [(0, "none", "none", small_buckets, 1), (1, "none", "none", small_buckets, 1),
             (2, "none", "none", small_buckets, 1), (3, "none", "none", small_buckets, 1),
             (1, "cpu", "none", small_buckets, 1), (2, "cpu", "none", small_buckets, 1),
             (3, "cpu", "none", small_buckets, 1), (3, "none", "cpu", small_buckets, 1),
             (3, "cpu", "cpu", small_buckets, 1), (2, "none", "none", dict(small_buckets, overlap_comm=True), 1),
             (2, "none", "none", {}, 2),
             (3, "none", "none", dict(small_buckets, reduce_scatter=False), 1),
             (2, "cpu", "none", dict(small_buckets, overlap_comm=True), 2),
             (2, "cpu", "none", dict(small_buckets, reduce_scatter=False), 2)]
    for stage, offload, offload_param, options, micro_steps in cases:
        micro = per_rank // micro_steps
        config = {"train_micro_batch_size_per_gpu": micro, "gradient_accumulation_steps": micro_steps,
                  "gradient_clipping": 0.5, "optimizer": {"type": "Adam", "params": {"lr": 1e-2}},
                  "zero_optimization": dict(options, stage=stage, stage3_param_persistence_threshold=0,
                                            offload_optimizer={"device": offload},
                                            offload_param={"device": offload_param})}
        engine, _, _, _ = zero.initialize(model=model(), config=config)
        for x, y in batches:
            for m in range(micro_steps):
                part = slice(shard.start + m * micro, shard.start + (m + 1) * micro)
                engine.backward(torch.nn.functional.mse_loss(engine(x[part].to(cuda)), y[part].to(cuda)))
                engine.step()
        got = engine.full_parameters()
        worst = max(float((got[name].cpu() - want).abs().max()) for name, want in expected.items())
        offloaded = ", optimizer offloaded to the CPU" if offload == "cpu" else ""
        offloaded += ", parameters offloaded to the CPU" if offload_param == "cpu" else ""
        offloaded += ", default buckets" if "reduce_bucket_size" not in options else ""
        offloaded += ", 2 micro-steps" if micro_steps == 2 else ""
        offloaded += ", reduce_scatter off" if options.get("reduce_scatter") is False else ""
        offloaded += ", overlap_comm" if options.get("overlap_comm") else ""
        checks.report(f"ZeRO stage {stage}{offloaded} on CUDA = full-batch Adam", worst <= 1e-5,
                      f"max difference {worst:.2e}")


def run_zero_gpt(torch, dist, checks, rank, world):
    """A small GPT-style model (token and position embeddings, two causal transformer blocks, a
    tied-free LM head) trained by torch_collective.zero on CUDA, stages 1-3, with and without
    offload, in float32 and in bf16 and fp16 (dynamic loss scaling), against the same model
    trained alone on the full batch by torch.optim.AdamW in float32, on sequences it can learn
    (arithmetic progressions of tokens): float32 within 1e-4 in every step's loss, mixed precision
    within a tenth of what the reference's loss falls over the run."""
    from torch_collective import zero

    cuda = torch.device("cuda", 0)
    vocab, width, length, per_rank, steps = 96, 32, 16, 4, 8

    class TinyGpt(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.tokens = torch.nn.Embedding(vocab, width)
            self.positions = torch.nn.Embedding(length, width)
            self.blocks = torch.nn.ModuleList(
                torch.nn.TransformerEncoderLayer(width, 2, 4 * width, dropout=0.0, batch_first=True)
                for _ in range(2))
            self.head = torch.nn.Linear(width, vocab)

        def forward(self, ids):
            x = self.tokens(ids) + self.positions(torch.arange(ids.shape[1], device=ids.device))
            mask = torch.nn.Transformer.generate_square_subsequent_mask(ids.shape[1], device=ids.device, dtype=x.dtype)
            for block in self.blocks:
                x = block(x, src_mask=mask, is_causal=True)
            return self.head(x)

    def model():
        torch.manual_seed(77)
        return TinyGpt().to(cuda)

    def loss_of(net, ids):
        logits = net(ids[:, :-1])
        return torch.nn.functional.cross_entropy(logits.float().reshape(-1, vocab), ids[:, 1:].reshape(-1))

    generator = torch.Generator().manual_seed(21)
    batches = []
    for _ in range(steps):
        start = torch.randint(0, vocab, (world * per_rank, 1), generator=generator)
        stride = torch.randint(1, 4, (world * per_rank, 1), generator=generator)
        batches.append((start + stride * torch.arange(length + 1)) % vocab)
    reference = model()
    optimizer = torch.optim.AdamW(reference.parameters(), lr=1e-2, weight_decay=0.01)
    expected = []
    for ids in batches:
        optimizer.zero_grad()
        loss = loss_of(reference, ids.to(cuda))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(reference.parameters(), 1.0)
        optimizer.step()
        expected.append(float(loss))
    fall = expected[0] - min(expected)
    checks.report("GPT-style reference learns", fall > 0.3, f"loss {expected[0]:.3f} -> {expected[-1]:.3f}")
    shard = slice(rank * per_rank, (rank + 1) * per_rank)
    for precision in ("fp32", "bf16", "fp16"):
        for stage, offload in ((1, "none"), (2, "none"), (3, "none"), (2, "optimizer"), (3, "both")):
            zero_options = {"stage": stage, "stage3_param_persistence_threshold": 0, "reduce_bucket_size": 2000}
            if offload in ("optimizer", "both"):
                zero_options["offload_optimizer"] = {"device": "cpu"}
            if offload == "both":
                zero_options["offload_param"] = {"device": "cpu"}
            config = {"train_micro_batch_size_per_gpu": per_rank, "gradient_clipping": 1.0,
                      "optimizer": {"type": "AdamW", "params": {"lr": 1e-2, "weight_decay": 0.01}},
                      "zero_optimization": zero_options}
            if precision == "bf16":
                config["bf16"] = {"enabled": True}
            elif precision == "fp16":
                config["fp16"] = {"enabled": True, "initial_scale_power": 8}
            engine = zero.initialize(model=model(), config=config)[0]
            losses = []
            for ids in batches:
                loss = loss_of(engine, ids[shard].to(cuda))
                engine.backward(loss)
                engine.step()
                total = loss.detach().float().reshape(1)
                dist.all_reduce(total)
                losses.append(float(total) / world)
            worst = max(abs(a - b) for a, b in zip(losses, expected))
            ok = worst <= (1e-4 if precision == "fp32" else 0.1 * fall)
            checks.report(f"ZeRO GPT-style {precision} stage {stage} offload {offload} on CUDA = one process",
                          ok, f"largest loss difference {worst:.2e} over {steps} steps, skipped {engine.skipped_steps}")


def run_zero_checkpoints(torch, dist, checks, rank, world, directory):
    """A checkpoint saved by a stage-3 engine on CUDA (parameters offloaded) loads into a stage-1
    engine on the CPU with the same values, and one the CPU engine saves after a step loads back
    into the CUDA engine: checkpoints hold float32 on the CPU whatever the model's device."""
    from torch_collective import zero

    def model(device):
        torch.manual_seed(99)
        return torch.nn.Sequential(torch.nn.Linear(12, 24), torch.nn.Tanh(), torch.nn.Linear(24, 3)).to(device)

    def engine(device, stage, extra):
        config = {"train_micro_batch_size_per_gpu": 4, "optimizer": {"type": "AdamW", "params": {"lr": 1e-2}},
                  "zero_optimization": dict({"stage": stage, "stage3_param_persistence_threshold": 0}, **extra)}
        return zero.initialize(model=model(device), config=config)[0]

    def train(engine, device, steps):
        generator = torch.Generator().manual_seed(7 + engine.global_steps)
        for _ in range(steps):
            x, y = torch.randn(4, 12, generator=generator), torch.randn(4, 3, generator=generator)
            engine.backward(torch.nn.functional.mse_loss(engine(x.to(device)), y.to(device)))
            engine.step()

    def same(a, b):
        return all(torch.equal(a[name].cpu(), b[name].cpu()) for name in a)

    cuda = torch.device("cuda", 0)
    on_gpu = engine(cuda, 3, {"offload_param": {"device": "cpu"}})
    train(on_gpu, cuda, 2)
    on_gpu.save_checkpoint(directory, tag="gpu")
    on_cpu = engine("cpu", 1, {})
    on_cpu.load_checkpoint(directory, tag="gpu")
    checks.report("ZeRO checkpoint: CUDA stage 3 (parameter offload) -> CPU stage 1",
                  same(on_gpu.full_parameters(), on_cpu.full_parameters()), "parameters equal after loading")
    train(on_cpu, "cpu", 1)
    on_cpu.save_checkpoint(directory, tag="cpu")
    on_gpu.load_checkpoint(directory, tag="cpu")
    checks.report("ZeRO checkpoint: CPU stage 1 -> CUDA stage 3",
                  same(on_gpu.full_parameters(), on_cpu.full_parameters()), "parameters equal after loading")
