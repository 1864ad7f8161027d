"""DeepSpeed's CIFAR-10 training loop on torch_collective.zero (ZeRO stages 0-3).

    PYTHONPATH=build/python collrun -n 2 /usr/bin/python3 examples/zero_cifar.py [--stage 0|1|2|3]
        [--config examples/zero_config.json] [--epochs N] [--samples N] [--bf16] [--save-dir DIR]

The loop is DeepSpeed's tutorial with one import changed (`from torch_collective import zero`
instead of `import deepspeed`). Nothing can be downloaded here, so the images are generated:
32x32 colour images whose class (one of 10) decides a pattern of stripes and a colour tint, plus
noise; a small CNN learns them in an epoch or two. With --save-dir the engine saves a sharded
checkpoint after every epoch and the script shows that it loads back.
"""
import argparse
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import TensorDataset

from torch_collective import zero


class Net(nn.Module):
    """The CIFAR-10 tutorial's network."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


def generated_cifar(samples, seed=0):
    """CIFAR-shaped data a CNN can learn: class c has stripes of period 2 + c % 5 (horizontal for
    c < 5, vertical otherwise) and a tint on channel c % 3."""
    generator = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, 10, (samples,), generator=generator)
    positions = torch.arange(32, dtype=torch.float32)
    images = 3.0 * torch.randn(samples, 3, 32, 32, generator=generator)
    for c in range(10):
        chosen = labels == c
        stripes = torch.sin(positions * (2 * 3.14159 / (2 + c % 5)))
        pattern = stripes.view(32, 1).expand(32, 32) if c < 5 else stripes.view(1, 32).expand(32, 32)
        images[chosen] += pattern
        images[chosen, c % 3] += 0.3
    return TensorDataset(images, labels)


def default_config(stage, bf16):
    return {
        "train_batch_size": 32, "steps_per_print": 20,
        "optimizer": {"type": "Adam", "params": {"lr": 0.001, "betas": [0.8, 0.999], "eps": 1e-8,
                                                 "weight_decay": 3e-7}},
        "gradient_clipping": 1.0,
        "bf16": {"enabled": bf16},
        "zero_optimization": {"stage": stage, "overlap_comm": True, "reduce_bucket_size": 50_000_000,
                              "allgather_bucket_size": 50_000_000, "stage3_param_persistence_threshold": 1000},
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stage", type=int, default=2, choices=[0, 1, 2, 3], help="ZeRO stage (default 2)")
    parser.add_argument("--config", help="a DeepSpeed-style JSON config (its stage wins over --stage)")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--samples", type=int, default=4096, help="generated training images (default 4096)")
    parser.add_argument("--bf16", action="store_true", help="train in bfloat16 with float32 master weights")
    parser.add_argument("--save-dir", help="save a sharded checkpoint here after every epoch")
    args = parser.parse_args()

    dist.init_process_group("collective")
    torch.manual_seed(0)
    net = Net()
    config = args.config or default_config(args.stage, args.bf16)
    trainset = generated_cifar(args.samples)
    model_engine, optimizer, trainloader, _ = zero.initialize(
        args=args, model=net, model_parameters=net.parameters(), training_data=trainset, config=config)
    rank = dist.get_rank()
    criterion = nn.CrossEntropyLoss()
    print_every = model_engine.config.steps_per_print or 20

    started = time.perf_counter()
    for epoch in range(args.epochs):
        trainloader.sampler.set_epoch(epoch)
        running_loss = 0.0
        for i, data in enumerate(trainloader):
            inputs, labels = data[0], data[1]
            outputs = model_engine(inputs)
            loss = criterion(outputs.float(), labels)
            model_engine.backward(loss)
            model_engine.step()
            running_loss += loss.item()
            if i % print_every == print_every - 1 and rank == 0:
                print(f"[epoch {epoch + 1}, step {i + 1:4d}] loss: {running_loss / print_every:.3f}", flush=True)
                running_loss = 0.0
        if args.save_dir:
            model_engine.save_checkpoint(args.save_dir, client_state={"epoch": epoch + 1})

    elapsed = time.perf_counter() - started
    testset = generated_cifar(1000, seed=1)
    model_engine.eval()
    with torch.no_grad():
        predicted = model_engine(testset.tensors[0]).float().argmax(1)
    accuracy = (predicted == testset.tensors[1]).float().mean().item()
    memory = model_engine.memory_breakdown()
    if args.save_dir:
        _, client_state = model_engine.load_checkpoint(args.save_dir)
        assert client_state["epoch"] == args.epochs, client_state
    if rank == 0:
        print(f"stage {model_engine.zero_optimization_stage()}, {dist.get_world_size()} ranks: "
              f"{model_engine.global_steps} steps in {elapsed:.1f} s, accuracy on 1000 new images {accuracy:.1%}")
        print("model-state bytes on this rank: " + ", ".join(f"{k} {v}" for k, v in memory.items()))
    # The classes are easy to tell apart: an untrained net is at 10%.
    if accuracy < 0.5:
        raise SystemExit(f"rank {rank}: accuracy {accuracy:.1%} after {args.epochs} epochs: expected > 50%")


if __name__ == "__main__":
    main()
