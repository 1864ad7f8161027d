"""Shared by the ZeRO tests: a small CIFAR-style CNN with odd-sized layers, batches every rank can
recompute, a DeepSpeed-style config, and the reference: the same model trained by plain
torch.optim on the whole global batch in one process."""
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

from torch_collective import zero

MICRO_BATCH = 3
CLASSES = 7


class SmallCnn(nn.Module):
    """3x8x8 images, 7 classes; 1291 parameters in layers of 140, 1053 and 98 (none a multiple of
    the shard alignment)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 5, 3, padding=1)
        self.fc1 = nn.Linear(80, 13)
        self.fc2 = nn.Linear(13, CLASSES)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv(x)), 2)
        return self.fc2(torch.tanh(self.fc1(x.flatten(1))))


def make_model(seed=7):
    torch.manual_seed(seed)
    return SmallCnn()


def global_batch(step, samples):
    generator = torch.Generator().manual_seed(1000 + step)
    images = torch.randn(samples, 3, 8, 8, generator=generator)
    labels = torch.randint(0, CLASSES, (samples,), generator=generator)
    return images, labels


def micro_batches(step, ranks, rank, accumulation):
    """This rank's micro-batches of global step `step`: micro-batch m of every rank is the m-th
    block of the global batch, split evenly over the ranks."""
    images, labels = global_batch(step, MICRO_BATCH * ranks * accumulation)
    for micro in range(accumulation):
        first = (micro * ranks + rank) * MICRO_BATCH
        yield images[first:first + MICRO_BATCH], labels[first:first + MICRO_BATCH]


def config(stage, optimizer="Adam", accumulation=1, **zero_options):
    params = {"lr": 0.01}
    if optimizer == "SGD":
        params.update(momentum=0.9, weight_decay=0.01, nesterov=True)
    elif optimizer == "Adam":
        params.update(weight_decay=0.01, adam_w_mode=False)
    else:
        params.update(weight_decay=0.05, betas=[0.8, 0.99])
    options = {"stage": stage, "stage3_param_persistence_threshold": 0}
    options.update(zero_options)
    return {"train_micro_batch_size_per_gpu": MICRO_BATCH, "gradient_accumulation_steps": accumulation,
            "optimizer": {"type": optimizer, "params": params}, "zero_optimization": options}


def reference_optimizer(name, params):
    if name == "SGD":
        return torch.optim.SGD(params, lr=0.01, momentum=0.9, weight_decay=0.01, nesterov=True)
    if name == "Adam":
        return torch.optim.Adam(params, lr=0.01, weight_decay=0.01)
    return torch.optim.AdamW(params, lr=0.01, weight_decay=0.05, betas=(0.8, 0.99))


def train_engine(engine, first_step, steps, accumulation):
    ranks, rank = engine.world_size, engine.rank
    for step in range(first_step, first_step + steps):
        for images, labels in micro_batches(step, ranks, rank, accumulation):
            loss = F.cross_entropy(engine(images), labels)
            engine.backward(loss)
            engine.step()


def train_reference(optimizer_name, steps, ranks, accumulation, clipping=0.0, model=None):
    model = model or make_model()
    optimizer = reference_optimizer(optimizer_name, model.parameters())
    for step in range(steps):
        images, labels = global_batch(step, MICRO_BATCH * ranks * accumulation)
        optimizer.zero_grad()
        F.cross_entropy(model(images), labels).backward()
        if clipping > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clipping)
        optimizer.step()
    return {name: p.detach().clone() for name, p in model.named_parameters()}


def new_engine(cfg, group=None, seed=7):
    model = make_model(seed)
    engine, _, _, _ = zero.initialize(model=model, model_parameters=model.parameters(), config=cfg, group=group)
    return engine


def max_difference(actual, expected):
    return max((actual[name] - expected[name]).abs().max().item() for name in expected)


def init():
    if not dist.is_initialized():
        dist.init_process_group("collective")
    return dist.get_world_size(), dist.get_rank()
