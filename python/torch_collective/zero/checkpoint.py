"""Sharded checkpoints: each rank writes its part of the float32 parameters and optimizer state,
rank 0 the metadata. Any number of ranks can load them (each reads the parts of the old shards
that overlap its new one), and consolidate() rebuilds the full float32 state dict in one process,
as DeepSpeed's zero_to_fp32.

<save_dir>/latest                  the newest tag
<save_dir>/<tag>/zero_meta.pt      layout (names, shapes, offsets), counters, optimizer settings,
                                   loss scale, lr scheduler, client_state, config
<save_dir>/<tag>/zero_shard_rank<r>.pt   rank r's elements [begin, end) of the unpadded flat
                                   buffer: "master" (float32 parameters) and the optimizer state
"""
import collections
import os

import torch
import torch.distributed as dist

FORMAT = "torch_collective.zero/1"
_META = "zero_meta.pt"
_LATEST = "latest"


def _shard_file(path, rank):
    return os.path.join(path, f"zero_shard_rank{rank:05d}.pt")


def _atomic_save(obj, filename):
    temporary = f"{filename}.tmp{os.getpid()}"
    torch.save(obj, temporary)
    os.replace(temporary, filename)


def _owned_range(engine):
    """The unpadded flat range this rank's shard covers, and where it starts in the master."""
    begin, end = engine.layout.shard_range()
    end = min(end, engine.layout.total)
    begin = min(begin, end)
    master_start = begin if engine.stage == 0 else 0
    return begin, end, master_start


def save(engine, save_dir, tag, client_state, save_latest):
    tag = str(tag) if tag is not None else f"global_step{engine.global_steps}"
    path = os.path.join(save_dir, tag)
    os.makedirs(path, exist_ok=True)
    begin, end, start = _owned_range(engine)
    count = end - begin
    shard = {"format": FORMAT, "rank": engine.rank, "nranks": engine.world_size, "begin": begin, "end": end,
             "master": engine.optimizer.master[start:start + count].to("cpu", copy=True)}
    # On the CPU whatever the model's device: a checkpoint loads into a run on either.
    for name, tensor in engine.optimizer.state_tensors().items():
        shard[name] = tensor[start:start + count].to("cpu", copy=True)
    _atomic_save(shard, _shard_file(path, engine.rank))
    dist.barrier(group=engine.group)
    if engine.rank == 0:
        group = {k: v for k, v in engine.optimizer.param_groups[0].items() if k != "params"}
        meta = {
            "format": FORMAT, "nranks": engine.world_size, "total": engine.layout.total,
            "layout": engine.layout.describe(), "stage": engine.stage, "dtype": str(engine.dtype),
            "optimizer": engine.optimizer.kind, "param_group": group, "optimizer_steps": engine.optimizer.step_count,
            "global_steps": engine.global_steps, "micro_steps": engine.micro_steps,
            "skipped_steps": engine.skipped_steps, "loss_scaler": engine.loss_scaler.state_dict(),
            "lr_scheduler": engine.lr_scheduler.state_dict() if engine.lr_scheduler is not None else None,
            "client_state": client_state, "config": engine.config.raw,
        }
        _atomic_save(meta, os.path.join(path, _META))
        if save_latest:
            with open(os.path.join(save_dir, _LATEST + ".tmp"), "w") as file:
                file.write(tag)
            os.replace(os.path.join(save_dir, _LATEST + ".tmp"), os.path.join(save_dir, _LATEST))
    dist.barrier(group=engine.group)
    return path


def _resolve(load_dir, tag):
    if tag is None:
        latest = os.path.join(load_dir, _LATEST)
        if not os.path.isfile(latest):
            return None
        with open(latest) as file:
            tag = file.read().strip()
    return os.path.join(load_dir, str(tag))


def _read_meta(path):
    filename = os.path.join(path, _META)
    if not os.path.isfile(filename):
        raise ValueError(f"torch_collective.zero: {path} is not a checkpoint: {_META} is missing")
    meta = torch.load(filename)
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ValueError(f"torch_collective.zero: {filename} has format {meta.get('format') if isinstance(meta, dict) else '?'}"
                         f": expected {FORMAT}")
    return meta


class _ShardReader:
    """Reads element ranges of the unpadded flat buffer from the old ranks' shard files."""

    def __init__(self, path, meta):
        self.path = path
        self.nranks = meta["nranks"]
        self.total = meta["total"]
        self.cache = {}

    def _shard(self, rank):
        if rank not in self.cache:
            filename = _shard_file(self.path, rank)
            if not os.path.isfile(filename):
                raise ValueError(f"torch_collective.zero: checkpoint {self.path} saved by {self.nranks} ranks lacks "
                                 f"{os.path.basename(filename)}")
            self.cache[rank] = torch.load(filename)
        return self.cache[rank]

    def read(self, name, begin, end, out):
        """Fills out[0:end-begin] with elements [begin, end) of `name`."""
        for rank in range(self.nranks):
            shard = self._shard(rank)
            lo, hi = max(begin, shard["begin"]), min(end, shard["end"])
            if lo >= hi:
                continue
            if name not in shard:
                raise ValueError(f"torch_collective.zero: checkpoint {self.path} has no optimizer state '{name}'")
            out[lo - begin:hi - begin].copy_(shard[name][lo - shard["begin"]:hi - shard["begin"]])


def check_layout(meta, layout, path):
    saved = meta["layout"]
    here = layout.describe()
    for old, new in zip(saved, here):
        if old["name"] != new["name"] or list(old["shape"]) != list(new["shape"]):
            raise ValueError(f"torch_collective.zero: checkpoint {path} was saved from another model: it has parameter "
                             f"'{old['name']}' of shape {list(old['shape'])} where this model has '{new['name']}' of "
                             f"shape {list(new['shape'])}")
    if len(saved) != len(here) or meta["total"] != layout.total:
        raise ValueError(f"torch_collective.zero: checkpoint {path} was saved from another model: {len(saved)} "
                         f"parameters ({meta['total']} elements), this model has {len(here)} ({layout.total})")


def load(engine, load_dir, tag, load_optimizer_states, load_lr_scheduler_states):
    path = _resolve(load_dir, tag)
    if path is None:
        import warnings
        warnings.warn(f"torch_collective.zero: {load_dir} has no '{_LATEST}' file and no tag was given: nothing loaded")
        return None, None
    meta = _read_meta(path)
    check_layout(meta, engine.layout, path)
    optimizer = engine.optimizer
    if load_optimizer_states and meta["optimizer"] != optimizer.kind:
        raise ValueError(f"torch_collective.zero: checkpoint {path} holds {meta['optimizer']} state, this engine runs "
                         f"{optimizer.kind}: load with load_optimizer_states=False to take the parameters only")
    reader = _ShardReader(path, meta)
    if engine.device.type == "cuda":
        # The host writes below may reach memory the device still reads: the pinned shards of
        # offload, which the last step's gathers may not have copied up yet.
        torch.cuda.current_stream(engine.device).synchronize()
    begin, end, start = _owned_range(engine)
    if engine.stage == 0:
        begin, end, start = 0, engine.layout.total, 0
    targets = {"master": optimizer.master}
    if load_optimizer_states:
        targets.update(optimizer.state_tensors())
    for name, tensor in targets.items():
        reader.read(name, begin, end, tensor[start:start + end - begin])
    if load_optimizer_states:
        optimizer.step_count = int(meta["optimizer_steps"])
        optimizer.param_groups[0].update(meta["param_group"])
        engine.loss_scaler.load_state_dict(meta["loss_scaler"])
    engine.global_steps = int(meta["global_steps"])
    engine.micro_steps = int(meta["micro_steps"])
    engine.skipped_steps = int(meta["skipped_steps"])
    if load_lr_scheduler_states and engine.lr_scheduler is not None and meta["lr_scheduler"] is not None:
        engine.lr_scheduler.load_state_dict(meta["lr_scheduler"])
    engine.parameters_from_master()
    engine._publish_parameters()
    engine._clear_gradients()
    dist.barrier(group=engine.group)
    return path, meta["client_state"]


def consolidate(save_dir, tag=None):
    """The full float32 parameters of a checkpoint, by name (an OrderedDict), in one process."""
    path = _resolve(save_dir, tag)
    if path is None:
        raise ValueError(f"torch_collective.zero: {save_dir} has no '{_LATEST}' file: give the tag")
    meta = _read_meta(path)
    reader = _ShardReader(path, meta)
    flat = torch.empty(meta["total"], dtype=torch.float32)
    reader.read("master", 0, meta["total"], flat)
    state = collections.OrderedDict()
    for entry in meta["layout"]:
        numel = 1
        for size in entry["shape"]:
            numel *= size
        state[entry["name"]] = flat[entry["offset"]:entry["offset"] + numel].view(entry["shape"]).clone()
    return state
