"""`commprof bench` results: per op and size, time, algbw, busbw and correctness; alpha-beta fits.

The latency-bandwidth model t(S) = alpha + S / bandwidth is fitted per backend and op by least
squares over the measured sizes (medians). busbw applies the nccl-tests factor to the bandwidth.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from commprof.analysis.breakdown import percentile
from commprof.trace.rules import busbw_factor

SCHEMA_VERSION = 1


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
    ddp_bucket: bool = False  # a size DDP uses for --model


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
class BenchResult:
    name: str
    world_size: int
    rows: list[BenchRow]
    fits: list[AlphaBeta]
    unavailable: dict[str, str] = field(default_factory=dict)  # backend -> why it could not run
    ddp_bucket_sizes: list[int] = field(default_factory=list)
    schema_version: int = SCHEMA_VERSION

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), indent=2)


def summarize(backend: str, world_size: int, raw_rows: list[dict[str, Any]], buckets: list[int]) -> list[BenchRow]:
    rows = []
    for raw in raw_rows:
        times = raw["times_us"]
        median = statistics.median(times)
        algbw = raw["bytes"] / (median * 1e-6) / 1e9 if median > 0 else 0.0
        factor = busbw_factor(raw["op"], world_size) or 1.0
        rows.append(BenchRow(backend, raw["op"], raw["bytes"], raw["dtype"], median, percentile(times, 10),
                             percentile(times, 90), algbw, algbw * factor, raw["correct"],
                             any(_near(raw["bytes"], b) for b in buckets)))
    return rows


def _near(size: int, bucket: int) -> bool:
    """The measured size closest to a bucket on a log scale marks it (sizes step by --factor)."""
    return size / 2 < bucket <= size * 2 and abs(size - bucket) <= abs(size * 2 - bucket)


def fit_alpha_beta(rows: list[BenchRow], world_size: int) -> list[AlphaBeta]:
    fits = []
    for backend, op in sorted({(r.backend, r.op) for r in rows}):
        points = [(r.bytes, r.median_us) for r in rows if r.backend == backend and r.op == op]
        if len(points) < 2:
            continue
        xs, ys = zip(*points)
        slope, intercept = statistics.linear_regression(xs, ys)
        if slope <= 0:
            continue
        bandwidth = 1 / slope / 1e3  # bytes per microsecond -> GB/s
        fits.append(AlphaBeta(backend, op, max(intercept, 0.0), bandwidth,
                              bandwidth * (busbw_factor(op, world_size) or 1.0), len(points)))
    return fits


def write_bench(result: BenchResult, folder: Path) -> dict[str, Path]:
    """bench.json, bench.csv and busbw.png."""
    from commprof.render.plots import busbw_plot

    paths = {"json": folder / "bench.json", "csv": folder / "bench.csv", "plot": folder / "busbw.png"}
    paths["json"].write_text(result.to_json())
    header = [f.name for f in dataclasses.fields(BenchRow)]
    lines = [",".join(header)] + [",".join(str(getattr(r, h)) for h in header) for r in result.rows]
    paths["csv"].write_text("\n".join(lines) + "\n")
    paths["plot"].write_bytes(busbw_plot(result))
    return paths
