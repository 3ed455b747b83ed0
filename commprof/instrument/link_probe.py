"""The link the gradients travel, timed alone: all-reduces at a few sizes after training.

The trace's all-reduce durations are not each call's own cost wherever calls run side by side (Gloo's worker
threads run several at once) or wait for a late rank; the bucket model's latency and bandwidth need it alone.
A fraction of a second: REPEATS all-reduces of each size, each after a barrier. Each repeat keeps the time of the
rank that arrived last (the others' include waiting for it); the analysis takes the fastest repeats, since a busy
host only ever adds time (analysis/predict.probed_link)."""

from __future__ import annotations

import time
from typing import Any

import torch
import torch.distributed as dist

from commprof.instrument.profiler import cuda_synchronize
from commprof.results.run_record import ProbedSize

PROBE_BYTES = (4 * 1024, 256 * 1024, 4 * 1024 * 1024)
REPEATS = 15


def probe_link(device: torch.device) -> list[ProbedSize]:
    """Per size: every repeat's time in us, the fastest rank's (the last to arrive: it waited for no one)."""
    use_cuda = device.type == "cuda"
    rows = []
    for nbytes in PROBE_BYTES:
        tensor = torch.zeros(nbytes // 4, dtype=torch.float32, device=device)
        dist.all_reduce(tensor)  # warm-up: connections, buffers
        times = []
        for _ in range(REPEATS):
            dist.barrier()
            cuda_synchronize(use_cuda)
            start = time.perf_counter()
            dist.all_reduce(tensor)
            cuda_synchronize(use_cuda)
            times.append((time.perf_counter() - start) * 1e6)
        gathered: list[Any] = [None] * dist.get_world_size()
        dist.all_gather_object(gathered, times)
        rows.append(ProbedSize(nbytes, [min(t) for t in zip(*gathered, strict=False)]))
    return rows
