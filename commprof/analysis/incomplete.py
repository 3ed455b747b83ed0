"""A failed or interrupted run's report covers only the steps that completed on every rank (render/ says so)."""

from __future__ import annotations

import dataclasses
import re

from commprof.results.rank_facts import Unfinished
from commprof.results.run_record import RunSummary
from commprof.trace.model import RankTrace, RunTrace

_STEP_NUMBER = re.compile(r"#(\d+)$")


def completed_steps_only(trace: RunTrace, run: RunSummary | None) -> tuple[RunTrace, Unfinished | None]:
    """For a run whose run.json says it failed or was interrupted: drop the steps at and after the first that
    did not complete (their ranges were closed by the failure, not by the step's end), and the ranks left
    with none. Returns the trace and what the report covers of the run (None when the run completed)."""
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
    unfinished = Unfinished(
        status=run.status,
        error=run.error,
        completed=completed,
        covered=(covered[0], covered[-1]) if covered else None,
        missing=missing_ranks(trace, run),
        emptied=[r.rank for r in emptied],
        failure=run.failure,
    )
    return dataclasses.replace(trace, ranks=tuple(kept)), unfinished


def _traced(name: str) -> int | None:
    """ProfilerStep#12 -> 12; None for a range without a number."""
    match = _STEP_NUMBER.search(name)
    return int(match.group(1)) if match else None


def missing_ranks(trace: RunTrace, run: RunSummary | None) -> list[int]:
    """The ranks of the job (run.json's world size, or the traces' own) that have no trace here."""
    world = (run.world_size if run else 0) or max((r.world_size or 0 for r in trace.ranks), default=0)
    return sorted(set(range(world)) - {r.rank for r in trace.ranks})
