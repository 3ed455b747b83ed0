"""Wrap a model in DistributedDataParallel with commprof's options."""

from __future__ import annotations

import torch
from torch import nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel

from commprof.config import DDPOptions

_HOOKS = {"fp16": default_hooks.fp16_compress_hook, "bf16": default_hooks.bf16_compress_hook}


def mpi_allreduce_hook(state, bucket):  # no annotations: DDP checks them and rejects strings
    """All-reduce a gradient bucket over MPI (mpi4py), as a `mpi:all_reduce` profiler range with its shape."""
    from mpi4py import MPI

    world = MPI.COMM_WORLD
    tensor = bucket.buffer()
    with torch._C._profiler._RecordFunctionFast("mpi:all_reduce", [tensor]):
        world.Allreduce(MPI.IN_PLACE, tensor.detach().numpy(), op=MPI.SUM)
    tensor.div_(world.Get_size())
    future: torch.futures.Future = torch.futures.Future()
    future.set_result(tensor)
    return future


def wrap_ddp(model: nn.Module, options: DDPOptions, device: torch.device,
             mpi_gradients: bool = False) -> DistributedDataParallel:
    """DDP with commprof's options; with `mpi_gradients`, buckets are all-reduced over MPI by a comm hook."""
    ddp = DistributedDataParallel(
        model,
        device_ids=[device.index] if device.type == "cuda" else None,
        bucket_cap_mb=options.bucket_cap_mb,
        find_unused_parameters=options.find_unused_parameters,
        gradient_as_bucket_view=options.gradient_as_bucket_view,
        static_graph=options.static_graph,
    )
    if mpi_gradients:
        ddp.register_comm_hook(None, mpi_allreduce_hook)
    elif options.comm_hook != "none":
        ddp.register_comm_hook(None, _HOOKS[options.comm_hook])
    return ddp


def ddp_logging_data(ddp: DistributedDataParallel) -> dict[str, object]:
    """DDP's own measurements (ns) and bucket sizes, for cross-checking the traces."""
    data = ddp._get_ddp_logging_data()
    keys = ("avg_backward_compute_time", "avg_backward_comm_time", "avg_backward_compute_comm_overlap_time",
            "avg_forward_compute_time", "bucket_sizes", "rebuilt_bucket_sizes", "num_buckets_reduced")
    return {k: data[k] for k in keys if k in data}


def bucket_sizes(model: nn.Module, bucket_cap_mb: float) -> list[int]:
    """The bucket sizes (bytes) DDP builds for this model, from DDP's own assignment function."""
    import torch.distributed as dist

    params = [p for p in model.parameters() if p.requires_grad][::-1]
    groups, _ = dist._compute_bucket_assignment_by_size(params, [int(bucket_cap_mb * 2**20)])
    return [sum(params[i].numel() * params[i].element_size() for i in group) for group in groups]
