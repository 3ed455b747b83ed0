"""The process-wide torch settings every rank gets, built-in run or user script alike: its CPU threads and TF32.
Decided by a pure function (tested for every combination), then applied."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Mapping

import torch


@dataclass(frozen=True)
class TorchSettings:
    threads: int | None  # intra-op threads; None: left as they are (a GPU rank)
    tf32: bool | None  # None: torch's own defaults stand


def rank_settings(device_type: str, tf32: bool | None, environ: Mapping[str, str], cores: int) -> TorchSettings:
    """What a rank on `device_type` applies, given the launcher's environment and the cores it may use."""
    if device_type != "cpu":
        return TorchSettings(threads=None, tf32=tf32)
    told = environ.get("OMP_NUM_THREADS", "")
    if told.isdigit() and int(told) > 0:
        # applied again: a rank forked from a process that loaded torch before it was set (launch/forkserver.py)
        # would not have it
        return TorchSettings(threads=int(told), tf32=tf32)
    # torchrun sets OMP_NUM_THREADS=1 for several ranks per node; elastic_launch does not. Without a share each, CPU
    # ranks oversubscribe the cores and stall for seconds in OpenMP spin-waits.
    return TorchSettings(threads=max(1, cores // max(1, int(environ.get("LOCAL_WORLD_SIZE", "1")))), tf32=tf32)


def apply_settings(settings: TorchSettings) -> None:
    if settings.threads is not None:
        torch.set_num_threads(settings.threads)
    if settings.tf32 is not None:
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = settings.tf32


def configure_rank(device: torch.device, tf32: bool | None) -> TorchSettings:
    """Make `device` this process's current device, then decide and apply its settings."""
    if device.type == "cuda":
        torch.cuda.set_device(device)
    settings = rank_settings(device.type, tf32, os.environ, len(os.sched_getaffinity(0)))
    apply_settings(settings)
    return settings


def bound_default_timeouts(timeout_s: float) -> None:
    """A user's script that makes its process groups without a timeout gets commprof's --timeout instead of torch's
    default (30 minutes for Gloo, 10 for NCCL): a rank stuck outside a collective fails the others' next collective
    within --timeout, so the job ends and is diagnosed instead of hanging. torch reads these names when a group is
    made (distributed_c10d._get_default_timeout); a timeout the script passes itself stands."""
    from datetime import timedelta

    import torch.distributed.distributed_c10d as c10d

    bound = timedelta(seconds=timeout_s)
    c10d.default_pg_timeout = bound
    if isinstance(c10d.default_pg_nccl_timeout, timedelta):  # None where torch was built without NCCL
        c10d.default_pg_nccl_timeout = bound
