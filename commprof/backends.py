"""The collective backends commprof runs and recognises: one row each, and everything that differs between them.

Adding a backend (UCC, XCCL on Intel GPUs, ...) is a row here; the code that reads each field is named beside it
(docs/architecture.md, "A new backend")."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Backend:
    name: str  # torch.distributed's name for it, and --backend's
    title: str  # how reports name it
    devices: tuple[str, ...]  # where its collectives' tensors may live (config, launch/resolve, `commprof backends`)
    gpu_per_rank: bool  # every rank needs a GPU of its own (launch/resolve, `commprof backends`)
    launched_by: str  # "elastic": torch elastic, as torchrun; "mpirun": MPI's launcher (launch/job)
    # trace/rules: the prefix of the CPU-side ranges during which it moves data (CPU backends), and the pattern
    # of the GPU kernels that execute its collectives (GPU backends)
    cpu_ranges: str | None = None
    kernels: re.Pattern[str] | None = None
    flight_recorder: bool = False  # torch's Flight Recorder can dump its collectives in flight (launch/launcher)
    fsdp: bool = True  # FSDP2 runs over it (config)

    def no_device(self, device: str) -> str:
        """Why its collectives cannot run on `device` (one of those it lacks)."""
        return f"{self.title} has no {device.upper()} transport"


TABLE = (
    Backend("gloo", "Gloo", ("cpu", "cuda"), gpu_per_rank=False, launched_by="elastic", cpu_ranges="gloo"),
    Backend(
        "nccl",
        "NCCL",
        ("cuda",),
        gpu_per_rank=True,
        launched_by="elastic",
        # every naming NCCL and RCCL have used starts with "nccl": ncclKernel_AllReduce_RING_LL_Sum_float,
        # ncclDevKernel_AllGather_RING_LL, ncclDevKernel_Generic, the pre-2.4 ncclAllReduceRingLLKernel_sum_f32
        kernels=re.compile(r"^nccl", re.IGNORECASE),
        flight_recorder=True,
    ),
    # torch builds rarely have MPI: commprof then all-reduces through mpi4py, on CPU tensors, under mpirun
    Backend("mpi", "MPI", ("cpu", "cuda"), gpu_per_rank=False, launched_by="mpirun", cpu_ranges="mpi", fsdp=False),
)
BACKENDS = tuple(b.name for b in TABLE)
_BY_NAME = {b.name: b for b in TABLE}


def by_name(name: str) -> Backend:
    """The row of a backend commprof knows (KeyError for another name: --backend is checked before)."""
    return _BY_NAME[name]
