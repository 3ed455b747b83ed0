"""RunTrace -> Report: the one analysis that `run`, `analyze` and every later command share."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from commprof.analysis.breakdown import breakdown_step, step_windows, summarize_rank
from commprof.analysis.collectives import collective_stats
from commprof.analysis.crossrank import cross_rank
from commprof.analysis.report import Report, SkippedFileInfo
from commprof.errors import UsageError
from commprof.trace.model import RunTrace


def analyze(trace: RunTrace, name: str, kind: str, run: dict[str, Any] | None = None) -> Report:
    summaries, steps, per_rank = [], [], []
    warnings = list(trace.warnings)
    for rank in sorted(trace.ranks, key=lambda r: r.rank):
        windows = step_windows(rank)
        if not windows:
            warnings.append(f"{rank.path}: no events to analyse")
            continue
        rank_steps = [breakdown_step(rank, w) for w in windows]
        summaries.append(summarize_rank(rank, rank_steps))
        steps += rank_steps
        per_rank.append((rank, windows))
        warnings += rank.warnings
    if not summaries:
        reasons = "; ".join(f"{s.path}: {s.reason}" for s in trace.skipped) or "no usable events"
        raise UsageError(f"nothing to analyse: {reasons}")
    return Report(
        name=name, kind=kind, created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        sources=[r.path for r in trace.ranks], ranks=summaries, collectives=collective_stats(per_rank),
        steps=steps, run=run or {}, skipped=[SkippedFileInfo(s.path, s.reason) for s in trace.skipped],
        warnings=warnings, cross_rank=cross_rank(per_rank, {s.rank: s.step_time_ms.median for s in summaries}),
    )
