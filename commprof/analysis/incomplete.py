"""A failed or interrupted run's report covers only the steps that completed on every rank, and says so."""

from __future__ import annotations

import dataclasses
import re

from commprof.results.run_record import RunSummary
from commprof.trace.model import RankTrace, RunTrace

_STEP_NUMBER = re.compile(r"#(\d+)$")


def completed_steps_only(trace: RunTrace, run: RunSummary | None) -> tuple[RunTrace, str | None]:
    """For a run whose run.json says it failed or was interrupted: drop the steps at and after the first that
    did not complete (their ranges were closed by the failure, not by the step's end), and the ranks left
    with none. Returns the trace and a sentence for the report (None when the run completed)."""
    if run is None or run.status not in ("failed", "running", "interrupted"):
        return trace, None
    completed = run.steps_completed or 0
    first = min((n for r in trace.ranks for s in r.steps if (n := _traced(s.name)) is not None), default=0)

    def step_of(name: str) -> int | None:
        traced = _traced(name)
        return None if traced is None else run.config.schedule.step_of(traced, first)

    kept: list[RankTrace] = []
    emptied: list[RankTrace] = []
    for rank in trace.ranks:
        steps = tuple(s for s in rank.steps if (step := step_of(s.name)) is not None and step <= completed)
        (kept if steps else emptied).append(dataclasses.replace(rank, steps=steps))
    covered = sorted({step for r in kept for s in r.steps if (step := step_of(s.name)) is not None})
    missing = missing_ranks(trace, run)
    parts = [
        f"the run was {run.error or 'interrupted'}"
        if run.status == "interrupted"
        else f"the run failed ({run.error or run.status})",
        f"{completed} step(s) completed on every rank; this report covers "
        + (f"steps {covered[0]}-{covered[-1]}, the traced ones among them" if covered else "no traced step of them"),
    ]
    if missing:
        parts.append(f"no trace from rank(s) {', '.join(map(str, missing))}")
    if emptied:
        parts.append(f"no completed traced step from rank(s) {', '.join(str(r.rank) for r in emptied)}")
    return dataclasses.replace(trace, ranks=tuple(kept)), "; ".join(parts)


def _traced(name: str) -> int | None:
    """ProfilerStep#12 -> 12; None for a range without a number."""
    match = _STEP_NUMBER.search(name)
    return int(match.group(1)) if match else None


def missing_ranks(trace: RunTrace, run: RunSummary | None) -> list[int]:
    """The ranks of the job (run.json's world size, or the traces' own) that have no trace here."""
    world = (run.world_size if run else 0) or max((r.world_size or 0 for r in trace.ranks), default=0)
    return sorted(set(range(world)) - {r.rank for r in trace.ranks})


def missing_note(missing: list[int], world: int) -> str:
    verb = "have" if len(missing) > 1 else "has"
    return (
        f"{len(missing)} of {world} ranks {verb} no trace here (rank{'s' if len(missing) > 1 else ''} "
        f"{rank_ranges(missing)}): every figure, across ranks too, covers the {world - len(missing)} present. "
        "Give every rank's traces for the whole job (with a node-local --traces-dir, copy each node's into "
        "one folder)"
    )


def rank_ranges(ranks: list[int]) -> str:
    """[1, 2, 3, 7] -> '1-3, 7'."""
    parts, start = [], None
    for i, rank in enumerate(ranks):
        if start is None:
            start = rank
        if i + 1 == len(ranks) or ranks[i + 1] != rank + 1:
            parts.append(str(start) if start == rank else f"{start}-{rank}")
            start = None
    return ", ".join(parts)
