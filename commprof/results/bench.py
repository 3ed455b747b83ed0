"""`commprof bench`: per backend, op and size, time, algbw, busbw and correctness; alpha-beta fits."""

from __future__ import annotations

from dataclasses import dataclass, field

from commprof.results.common import SCHEMA_VERSION, Result


@dataclass(frozen=True)
class BenchRow:
    backend: str
    op: str
    bytes: int
    dtype: str
    median_us: float
    p10_us: float
    p90_us: float
    algbw_gbps: float
    busbw_gbps: float
    correct: bool
    ddp_bucket: bool = False  # an all-reduce of a size DDP all-reduces its buckets at for --model


@dataclass(frozen=True)
class AlphaBeta:
    backend: str
    op: str
    alpha_us: float
    bandwidth_gbps: float  # algorithm bandwidth for large messages
    busbw_gbps: float
    sizes: int

    def predict_us(self, nbytes: int) -> float:
        return self.alpha_us + nbytes / (self.bandwidth_gbps * 1e3)


@dataclass(frozen=True)
class BenchResult(Result):
    name: str
    world_size: int
    rows: list[BenchRow]
    fits: list[AlphaBeta]
    unavailable: dict[str, str] = field(default_factory=dict)  # backend -> why it could not run
    ddp_bucket_sizes: list[int] = field(default_factory=list)
    host: str | None = None  # rank 0's host
    hosts: list[str] = field(default_factory=list)  # each rank's, rank order: findings use a bench of the run's hosts
    kind: str = "bench"
    schema_version: int = SCHEMA_VERSION
