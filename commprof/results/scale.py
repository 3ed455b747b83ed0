"""`commprof scale`: throughput, speedup and efficiency per world size, and predictions beyond them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from commprof.results.common import SCHEMA_VERSION, Estimate, Result
from commprof.results.job import CollectiveBusbw


@dataclass(frozen=True)
class ScalePoint:
    world_size: int
    global_batch: int
    per_rank_batch: int
    learning_rate: float  # the linear scaling rule from the smallest size's global batch
    step_ms: Estimate
    samples_per_s: float
    speedup: float
    efficiency: float
    compute_ms: float
    exposed_comm_ms: float
    idle_ms: float
    allreduce_busbw_gbps: float | None  # the job's own all-reduces' (the largest's); None: it ran none
    predicted_step_ms: float | None = None  # the model's value at a measured size (for checking it)
    nodes: int = 1  # the hosts its ranks ran on (`scale --nodes`)
    # each collective the job ran, by what it ran it as (FSDP's all-gathers and reduce-scatters, DDP's all-reduces):
    # its largest call's bus bandwidth, the mean over the size's launches
    busbw: list[CollectiveBusbw] = field(default_factory=list)

    @property
    def ranks(self) -> str:
        return f"{self.world_size} on {self.nodes} nodes" if self.nodes > 1 else str(self.world_size)


@dataclass(frozen=True)
class Prediction:
    world_size: int
    global_batch: int
    learning_rate: float
    step_ms: float
    exposed_comm_ms: float
    samples_per_s: float
    speedup: float
    efficiency: float
    best_bucket_cap_mb: float
    best_step_ms: float


@dataclass(frozen=True)
class ScaleReport(Result):
    name: str
    mode: str  # "weak" (same batch per rank) or "strong" (same global batch)
    model: str | None  # the module as the run built it (a built-in model's name); None: not recorded
    parameters: int | None  # None: not known
    device: str
    backend: str
    bucket_cap_mb: float | None  # DDP's; None: DDP's default (a script that passes none), or a job that is not DDP
    base_learning_rate: float
    points: list[ScalePoint]
    predictions: list[Prediction] = field(default_factory=list)
    link: dict[str, Any] | None = None
    compute: dict[str, float] | None = None
    # unprofiled wall-clock job step / traced step (the trace's clock: GPU time on GPUs), applied to predictions
    profiling_overhead: float = 1.0
    runs: list[str] = field(default_factory=list)
    order: list[int] = field(default_factory=list)  # world sizes in the order they ran (interleaved)
    script: list[str] | None = None  # a user's script and its arguments (the smallest size's)
    batch_argument: str | None = None  # the script's argument that holds its per-rank batch; None: not known
    # the kind of job (kinds.KINDS: ddp, fsdp, deepspeed, horovod); None: a script that built none commprof saw
    strategy: str | None = "ddp"
    # the kind's own options as the job ran with them, by their own names; None: not recorded (a script's own)
    settings: dict[str, Any] | None = None
    kind: str = "scale"
    schema_version: int = SCHEMA_VERSION

    @property
    def batch_known(self) -> bool:
        """Whether the per-rank batch is known: commprof's own model's, or read from a script's argument."""
        return not self.script or self.batch_argument is not None
