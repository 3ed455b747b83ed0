"""The link the gradients travel, timed alone: all-reduces at a few sizes after training.

The trace's all-reduce durations are not each call's own cost wherever calls run side by side (Gloo's worker
threads run several at once) or wait for a late rank; the bucket model's latency and bandwidth need it alone.
A fraction of a second: REPEATS all-reduces of each size, each after a barrier. Each repeat keeps the time of the
rank that arrived last (the others' include waiting for it); the analysis takes the fastest repeats, since a busy
host only ever adds time (analysis/predict.probed_link).

A job over several hosts is also probed by tier (`probe_tiers`): "network", one rank per host (each host's lowest),
the link between hosts; "host", the ranks of rank 0's host, where it holds two or more. A job on one host has only
the whole world's probe."""

from __future__ import annotations

import socket
import time
from typing import Any

import torch
import torch.distributed as dist

from commprof.instrument.profiler import cuda_synchronize
from commprof.results.run_record import ProbedSize, ProbedTier

PROBE_BYTES = (4 * 1024, 256 * 1024, 4 * 1024 * 1024)
REPEATS = 15


def probe_link(device: torch.device, group: Any = None) -> list[ProbedSize]:
    """Per size: every repeat's time in us, the fastest rank's (the last to arrive: it waited for no one)."""
    use_cuda = device.type == "cuda"
    return [
        ProbedSize(
            nbytes, timed_allreduces(torch.zeros(nbytes // 4, dtype=torch.float32, device=device), use_cuda, group)
        )
        for nbytes in PROBE_BYTES
    ]


def timed_allreduces(tensor: torch.Tensor, use_cuda: bool, group: Any = None, repeats: int = REPEATS) -> list[float]:
    """`tensor` all-reduced `repeats` times over `group` (None: the world), each after a barrier: per repeat the
    fastest rank's time in us. A collective: every rank of the group calls it."""
    dist.all_reduce(tensor, group=group)  # warm-up: connections, buffers
    times = []
    for _ in range(repeats):
        dist.barrier(group=group)
        cuda_synchronize(use_cuda)
        start = time.perf_counter()
        dist.all_reduce(tensor, group=group)
        cuda_synchronize(use_cuda)
        times.append((time.perf_counter() - start) * 1e6)
    gathered: list[Any] = [None] * dist.get_world_size(group)
    dist.all_gather_object(gathered, times, group=group)
    return [min(t) for t in zip(*gathered, strict=False)]


def tier_groups(hosts: list[str]) -> list[tuple[str, list[int]]]:
    """The tiers to probe, from each rank's host (in rank order): none on one host; else ("network", each host's
    lowest rank) and, where rank 0's host holds two ranks or more, ("host", its ranks)."""
    if len(set(hosts)) < 2:
        return []
    first: dict[str, int] = {}
    for rank, host in enumerate(hosts):
        first.setdefault(host, rank)
    tiers = [("network", sorted(first.values()))]
    local = [rank for rank, host in enumerate(hosts) if host == hosts[0]]
    if len(local) > 1:
        tiers.append(("host", local))
    return tiers


def probe_tiers(device: torch.device) -> list[ProbedTier]:
    """Every tier of tier_groups probed alone, one after the other; rank 0's record of them (the others' is empty).
    Every rank creates every group, in the same order (torch's rule for dist.new_group)."""
    hosts: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(hosts, socket.gethostname())
    rank, tiers = dist.get_rank(), []
    for tier, ranks in tier_groups(hosts):
        group = dist.new_group(ranks)
        if rank in ranks:
            sizes = probe_link(device, group)
            tiers.append(ProbedTier(tier, ranks, sizes))
        dist.barrier()  # the next tier starts when this one is done everywhere: they never share the link
    return tiers if rank == 0 else []
