"""ZeRO optimizer sharding on libcollective, with DeepSpeed's call shapes.

    from torch_collective import zero
    engine, optimizer, _, _ = zero.initialize(model=model, model_parameters=model.parameters(),
                                              config=ds_config)
    for x, y in batches:
        loss = criterion(engine(x), y)
        engine.backward(loss)
        engine.step()

Stages 0-3 (zero_optimization.stage) shard optimizer state, gradients and parameters across the
data-parallel ranks of the "collective" backend; engine.save_checkpoint / load_checkpoint write
and read sharded checkpoints (loadable by any number of ranks), consolidate_checkpoint rebuilds
the full float32 state dict. See docs/zero.md.
"""
from . import lr_schedules
from .checkpoint import consolidate as consolidate_checkpoint
from .config import ZeroConfig
from .engine import ZeroEngine
from .layout import set_leaf_modules

__all__ = ["initialize", "consolidate_checkpoint", "set_leaf_modules", "ZeroEngine", "ZeroConfig"]


def initialize(args=None, model=None, optimizer=None, model_parameters=None, training_data=None,
               lr_scheduler=None, config=None, config_params=None, collate_fn=None, group=None):
    """DeepSpeed's deepspeed.initialize: returns (engine, optimizer, training_dataloader, lr_scheduler).

    config: a DeepSpeed-style dict or the path of a JSON file (config_params and
    args.deepspeed_config are accepted too). optimizer: a torch.optim.Adam/AdamW/SGD whose
    settings are used, unless the config has an "optimizer" entry. training_data: a Dataset, for
    which a DataLoader with a DistributedSampler and the micro-batch size is returned. lr_scheduler:
    a scheduler built on the returned optimizer is not possible before it exists, so pass a
    callable optimizer -> scheduler, or step your own; with none, the config's "scheduler" entry
    (WarmupLR, WarmupDecayLR) is built, as DeepSpeed does. The process group is initialized from the
    environment (collrun, torchrun) with the "collective" backend when it is not yet.
    """
    if model is None:
        raise ValueError("torch_collective.zero.initialize: model is required")
    if config is None:
        config = config_params
    if config is None and args is not None:
        config = getattr(args, "deepspeed_config", None)
    engine = ZeroEngine(model, model_parameters=model_parameters, config=config, optimizer=optimizer, group=group)
    if callable(lr_scheduler) and not hasattr(lr_scheduler, "step"):
        lr_scheduler = lr_scheduler(engine.optimizer)
    if lr_scheduler is None and engine.config.scheduler is not None:
        # The config's "scheduler" entry, as DeepSpeed builds it when the program passes none.
        lr_scheduler = lr_schedules.build(engine.optimizer, engine.config.scheduler)
    engine.lr_scheduler = lr_scheduler
    loader = None
    if training_data is not None:
        import torch.utils.data as data

        sampler = data.distributed.DistributedSampler(training_data, num_replicas=engine.world_size,
                                                      rank=engine.rank)
        loader = data.DataLoader(training_data, batch_size=engine.train_micro_batch_size_per_gpu(),
                                 sampler=sampler, collate_fn=collate_fn)
    return engine, engine.optimizer, loader, lr_scheduler
