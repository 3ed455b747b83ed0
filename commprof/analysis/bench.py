"""`commprof bench` results: per op and size, time, algbw, busbw and correctness; alpha-beta fits.

The latency-bandwidth model t(S) = alpha + S / bandwidth is fitted per backend and op by least
squares over the measured sizes (medians). busbw applies the nccl-tests factor to the bandwidth.
"""

from __future__ import annotations

import statistics
from typing import Any

from commprof.analysis.breakdown import percentile
from commprof.results.bench import AlphaBeta, BenchRow
from commprof.trace.rules import busbw_factor


def summarize(backend: str, world_size: int, raw_rows: list[dict[str, Any]], buckets: list[int]) -> list[BenchRow]:
    rows = []
    for raw in raw_rows:
        times = raw["times_us"]
        median = statistics.median(times)
        algbw = raw["bytes"] / (median * 1e-6) / 1e9 if median > 0 else 0.0
        factor = busbw_factor(raw["op"], world_size) or 1.0
        rows.append(
            BenchRow(
                backend,
                raw["op"],
                raw["bytes"],
                raw["dtype"],
                median,
                percentile(times, 10),
                percentile(times, 90),
                algbw,
                algbw * factor,
                raw["correct"],
                any(_near(raw["bytes"], b) for b in buckets),
            )
        )
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
        xs, ys = zip(*points, strict=False)
        slope, intercept = statistics.linear_regression(xs, ys)
        if slope <= 0:
            continue
        bandwidth = 1 / slope / 1e3  # bytes per microsecond -> GB/s
        fits.append(
            AlphaBeta(
                backend,
                op,
                max(intercept, 0.0),
                bandwidth,
                bandwidth * (busbw_factor(op, world_size) or 1.0),
                len(points),
            )
        )
    return fits
