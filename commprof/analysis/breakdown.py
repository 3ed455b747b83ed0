"""Per rank, per step: compute, communication, overlap, exposed communication, idle, memory."""

from __future__ import annotations

import statistics

from commprof.analysis.phases import step_phases
from commprof.results.report import RankSummary, Stat, StepBreakdown
from commprof.trace.intervals import busy_until, clip, intersect, merge, total
from commprof.trace.model import RankTrace, Step

US_PER_MS = 1000.0


def step_windows(rank: RankTrace) -> list[Step]:
    """ProfilerStep windows; without step markers the whole trace is one window."""
    if rank.steps:
        return list(rank.steps)
    spans = [i for group in (rank.compute, rank.communication, rank.memory) for i in group]
    if not spans:
        return []
    return [Step("all", min(s for s, _ in spans), max(e for _, e in spans))]


def breakdown_step(rank: RankTrace, step: Step) -> StepBreakdown:
    compute = clip(rank.compute, step.start, step.end)
    comm = clip(rank.communication, step.start, step.end)
    memory = clip(rank.memory, step.start, step.end)
    overlap = total(intersect(compute, comm))
    compute_us, comm_us = total(compute), total(comm)
    window_us = step.end - step.start
    busy_us = total(merge([*compute, *comm, *memory]))  # memcpy/memset keep the device busy: not idle
    phases, micro_steps = step_phases(rank, step)
    return StepBreakdown(
        rank=rank.rank,
        step=step.name,
        window_ms=window_us / US_PER_MS,
        compute_ms=compute_us / US_PER_MS,
        comm_ms=comm_us / US_PER_MS,
        overlap_ms=overlap / US_PER_MS,
        exposed_comm_ms=(comm_us - overlap) / US_PER_MS,
        idle_ms=(window_us - busy_us) / US_PER_MS,
        memory_ms=total(memory) / US_PER_MS,
        carried_over_ms=step.carried_over_us / US_PER_MS,
        start_idle_ms=_idle_before_first(rank, step) / US_PER_MS,
        phases=phases,
        micro_steps=micro_steps,
    )


def summarize_rank(rank: RankTrace, steps: list[StepBreakdown]) -> RankSummary:
    def mean(attr: str) -> float:
        return statistics.fmean(getattr(s, attr) for s in steps)

    windows = [s.window_ms for s in steps]
    compute, comm, exposed = mean("compute_ms"), mean("comm_ms"), mean("exposed_comm_ms")
    window_mean = statistics.fmean(windows)
    return RankSummary(
        rank=rank.rank,
        kind=rank.kind,
        steps=len(steps),
        step_time_ms=Stat(statistics.median(windows), percentile(windows, 95), window_mean),
        compute_ms=compute,
        comm_ms=comm,
        overlap_ms=mean("overlap_ms"),
        exposed_comm_ms=exposed,
        idle_ms=mean("idle_ms"),
        memory_ms=mean("memory_ms"),
        carried_over_ms=mean("carried_over_ms"),
        comm_compute_ratio=comm / compute if compute > 0 else None,
        exposed_fraction=exposed / window_mean if window_mean > 0 else 0.0,
        host=rank.host,
    )


def percentile(values: list[float], pct: float) -> float:
    """Linear-interpolated percentile (numpy's default method)."""
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    position = (len(ordered) - 1) * pct / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _idle_before_first(rank: RankTrace, step: Step) -> float:
    """How long nothing ran before the step's first computation or copy, from the step's start (or the rank's last
    activity in the step before that, if later): a step ends where its optimizer's step returns, so the time before
    its first work is the input's and the loop's, and time after the optimizer's own work (its hooks) is the step
    before's. The first activity is not communication: the previous step's all-reduce often runs on past the
    boundary; waiting in it is activity all the same."""
    own = merge([*clip(rank.compute, step.start, step.end), *clip(rank.memory, step.start, step.end)])
    first = own[0][0] if own else step.end
    groups = (rank.compute, rank.memory, rank.communication)
    before = [b for b in (busy_until(group, first) for group in groups) if b is not None]
    return first - max([*before, step.start])
