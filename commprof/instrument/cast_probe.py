"""What gradient compression costs on this rank's device, timed alone after training (with the link probe).

torch's fp16_compress_hook and bf16_compress_hook (torch/distributed/algorithms/ddp_comm_hooks/default_hooks.py) add
to every bucket `buffer.to(dtype).div_(world_size)` before its all-reduce and `buffer.copy_(reduced)` after it: a
cast with a divide, and a cast back. Here a float32 buffer of each size goes through exactly that, REPEATS times,
and every repeat's time is kept (the analysis takes the fastest: a busy host only adds time). Besides the casts,
the 16-bit all-reduce itself is timed at the link probe's sizes (a CPU backend sums 16-bit values on the host,
which may cost more per byte than float32's sum): what the halved bytes take on this link, measured
(analysis/setting_findings.py weighs the two). A fraction of a second on a fast link."""

from __future__ import annotations

import time

import torch
import torch.distributed as dist

from commprof.instrument.link_probe import PROBE_BYTES, timed_allreduces
from commprof.instrument.profiler import cuda_synchronize
from commprof.results.run_record import CastCost

DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16}
REPEATS = 5  # the fastest is kept: a busy host only adds time
MB = 1024 * 1024


def typical_bucket_bytes(cap_mb: float | None, gradient_bytes: int | None) -> int:
    """The size of the run's full buckets: the cap (DDP's default 25 MB when nobody gave one), or all the
    gradients where they are fewer."""
    cap = int((cap_mb or 25.0) * MB)
    return min(cap, gradient_bytes) if gradient_bytes else cap


def probe_casts(device: torch.device, bucket_bytes: int | None = None) -> list[CastCost]:
    """Per dtype and size (the link probe's, and the run's typical bucket): every repeat's cast time in us on this
    rank, and at the link probe's sizes the 16-bit all-reduce's (every rank calls it: a collective)."""
    use_cuda = device.type == "cuda"
    world = dist.get_world_size()
    sizes = sorted({*PROBE_BYTES, *([bucket_bytes] if bucket_bytes and bucket_bytes > 0 else [])})
    rows = []
    for name, dtype in DTYPES.items():
        for nbytes in sizes:
            buffer = torch.ones(max(1, nbytes // 4), dtype=torch.float32, device=device)
            times = []
            for _ in range(REPEATS + 1):  # the first warms the allocator up, and is dropped
                cuda_synchronize(use_cuda)
                start = time.perf_counter()
                compressed = buffer.to(dtype).div_(world)
                buffer.copy_(compressed)
                cuda_synchronize(use_cuda)
                times.append((time.perf_counter() - start) * 1e6)
            reduced = timed_allreduces(buffer.to(dtype), use_cuda) if nbytes in PROBE_BYTES else []
            rows.append(CastCost(name, nbytes, times[1:], allreduce_us=reduced))
    return rows
