"""Wrap a model in DistributedDataParallel with commprof's options."""

from __future__ import annotations

import torch
from torch import nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel

from commprof.config import DDPOptions

_HOOKS = {"fp16": default_hooks.fp16_compress_hook, "bf16": default_hooks.bf16_compress_hook}


def wrap_ddp(model: nn.Module, options: DDPOptions, device: torch.device) -> DistributedDataParallel:
    ddp = DistributedDataParallel(
        model,
        device_ids=[device.index] if device.type == "cuda" else None,
        bucket_cap_mb=options.bucket_cap_mb,
        find_unused_parameters=options.find_unused_parameters,
        gradient_as_bucket_view=options.gradient_as_bucket_view,
        static_graph=options.static_graph,
    )
    if options.comm_hook != "none":
        ddp.register_comm_hook(None, _HOOKS[options.comm_hook])
    return ddp


def ddp_logging_data(ddp: DistributedDataParallel) -> dict[str, object]:
    """DDP's own measurements (ns) and bucket sizes, for cross-checking the traces."""
    data = ddp._get_ddp_logging_data()
    keys = ("avg_backward_compute_time", "avg_backward_comm_time", "avg_backward_compute_comm_overlap_time",
            "avg_forward_compute_time", "bucket_sizes", "rebuilt_bucket_sizes", "num_buckets_reduced")
    return {k: data[k] for k in keys if k in data}
