"""DeepSpeed's own example configs, and whether torch_collective.zero's config parser takes them
(which keys it names unknown, which it rejects): zero_vs_deepspeed.py prints the check first, and
alone with --configs-only.
"""
import os
import warnings

# DeepSpeedExamples training/cifar/ds_config.json (the CIFAR-10 tutorial), as published.
CIFAR_CONFIG = {
    "train_batch_size": 16,
    "steps_per_print": 250,
    "optimizer": {"type": "Adam", "params": {"lr": 0.001, "betas": [0.8, 0.999], "eps": 1e-8, "weight_decay": 3e-7}},
    "scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": 0, "warmup_max_lr": 0.001,
                                                 "warmup_num_steps": 1000}},
    "gradient_clipping": 1.0,
    "prescale_gradients": False,
    "bf16": {"enabled": True, "bf16_master_weights_and_grads": False, "loss_scale": 0, "loss_scale_window": 500,
             "hysteresis": 2, "min_loss_scale": 1, "initial_scale_power": 15},
    "fp16": {"enabled": False, "fp16_master_weights_and_grads": False, "loss_scale": 0, "loss_scale_window": 500,
             "hysteresis": 2, "min_loss_scale": 1, "initial_scale_power": 15},
    "wall_clock_breakdown": False,
    "zero_optimization": {"stage": 0, "allgather_partitions": True, "reduce_scatter": True,
                          "allgather_bucket_size": 50000000, "reduce_bucket_size": 50000000, "overlap_comm": True,
                          "contiguous_gradients": True, "cpu_offload": False},
}

# A GPT-style ZeRO-3 config: DeepSpeed's and Hugging Face's published ZeRO-3 example (fp16, AdamW,
# WarmupLR, offload), with numbers where Hugging Face writes "auto".
GPT_CONFIG = {
    "train_batch_size": 32,
    "train_micro_batch_size_per_gpu": 4,
    "gradient_accumulation_steps": 4,
    "fp16": {"enabled": True, "loss_scale": 0, "loss_scale_window": 1000, "initial_scale_power": 16,
             "hysteresis": 2, "min_loss_scale": 1},
    "bf16": {"enabled": False},
    "optimizer": {"type": "AdamW", "params": {"lr": 3e-5, "betas": [0.8, 0.999], "eps": 1e-8, "weight_decay": 3e-7}},
    "scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": 0, "warmup_max_lr": 3e-5, "warmup_num_steps": 500}},
    "zero_optimization": {
        "stage": 3,
        "offload_optimizer": {"device": "cpu", "pin_memory": True},
        "offload_param": {"device": "cpu", "pin_memory": True},
        "overlap_comm": True,
        "contiguous_gradients": True,
        "sub_group_size": 1e9,
        "reduce_bucket_size": 1e6,
        "stage3_prefetch_bucket_size": 0.94e6,
        "stage3_param_persistence_threshold": 1e4,
        "stage3_max_live_parameters": 1e9,
        "stage3_max_reuse_distance": 1e9,
        "stage3_gather_16bit_weights_on_model_save": True,
    },
    "gradient_clipping": 1.0,
    "steps_per_print": 2000,
    "wall_clock_breakdown": False,
}


def check_configs(world_size=2):
    """Our engine's parser on DeepSpeed's example configs: (name, unknown keys, error or None)."""
    from torch_collective.zero.config import ZeroConfig

    repository = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    configs = [("DeepSpeedExamples cifar ds_config.json", CIFAR_CONFIG, world_size),
               ("GPT-style ZeRO-3 (fp16, WarmupLR, offload)", GPT_CONFIG, world_size),
               ("examples/zero_config.json", os.path.join(repository, "examples", "zero_config.json"), world_size)]
    results = []
    for name, config, ranks in configs:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                ZeroConfig.load(config, ranks)
                error = None
            except ValueError as failure:
                error = str(failure)
        unknown = [str(w.message).split("'")[1] if "'" in str(w.message) else str(w.message) for w in caught]
        results.append((name, unknown, error))
    return results


def print_config_check():
    print("## Our engine's config parser on DeepSpeed configs (torch_collective.zero.config, 2 ranks)\n")
    print("| config | keys named unknown (ignored, with a warning) | rejected (ValueError) |")
    print("| --- | --- | --- |")
    for name, unknown, error in check_configs():
        print(f"| {name} | {', '.join(f'`{k}`' for k in unknown) or 'none'} | {error or 'none'} |")
    print()
