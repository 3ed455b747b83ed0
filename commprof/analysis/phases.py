"""Each step split by phase, by what ran: forward (each micro-step's forward: the time before the optimizer outside
the backward passes), backward (each backward pass, the last one to the optimizer) and optimizer (from its
Optimizer.step), each phase's time broken down as the whole step is (breakdown); how many micro-steps (backward
passes) make a step; and FSDP's parameter all-gathers by module, with what of them no computation hid."""

from __future__ import annotations

import statistics
from collections import defaultdict

from commprof.results.report import ModuleGathers, PhaseShare, StepBreakdown
from commprof.trace.intervals import clip, intersect, total
from commprof.trace.model import RankTrace, Step
from commprof.trace.roles import phase_segments
from commprof.trace.rules import PHASES

US_PER_MS = 1000.0


def step_phases(rank: RankTrace, step: Step) -> tuple[list[PhaseShare], int | None]:
    """The step's phases as the trace marks them, and how many micro-steps (backward passes) make it: ([], None)
    for a step it does not mark, or with no backward."""
    marks = next((m for m in rank.phase_marks if m.step == step.name), None)
    if marks is None or not any(phase == "backward" for phase, _ in marks.changes):
        return [], None
    segments = phase_segments(step, marks.changes)
    shares = []
    for phase in PHASES:  # every phase, if only for 0 ms (no Optimizer.step): the means add up to the step
        spans = [(start, end) for name, start, end in segments if name == phase]
        window = compute_us = comm_us = overlap = 0.0
        for start, end in spans:
            compute, comm = clip(rank.compute, start, end), clip(rank.communication, start, end)
            window += end - start
            compute_us += total(compute)
            comm_us += total(comm)
            overlap += total(intersect(compute, comm))
        shares.append(
            PhaseShare(
                phase,
                window / US_PER_MS,
                compute_us / US_PER_MS,
                comm_us / US_PER_MS,
                overlap / US_PER_MS,
                (comm_us - overlap) / US_PER_MS,
            )
        )
    return shares, marks.passes


def phase_means(steps: list[StepBreakdown]) -> list[PhaseShare]:
    """Each phase's mean over every rank's steps that mark it."""
    by_phase: dict[str, list[PhaseShare]] = defaultdict(list)
    for step in steps:
        for share in step.phases:
            by_phase[share.phase].append(share)
    return [
        PhaseShare(
            phase,
            *(
                statistics.fmean(getattr(s, field) for s in by_phase[phase])
                for field in ("window_ms", "compute_ms", "comm_ms", "overlap_ms", "exposed_comm_ms")
            ),
        )
        for phase in PHASES
        if by_phase.get(phase)
    ]


def micro_steps(steps: list[StepBreakdown]) -> int | None:
    """How many micro-steps (backward passes) make a step: the median over every rank's steps that mark it."""
    counts = [s.micro_steps for s in steps if s.micro_steps is not None]
    return statistics.median_low(counts) if counts else None


GATHER = "parameter all-gather"


def gathers_by_module(per_rank: list[tuple[RankTrace, list[Step]]]) -> list[ModuleGathers]:
    """FSDP's parameter all-gathers per module and phase, per step: how long, and how much of it no computation
    hid (prefetch did not start it early enough: the block waited). Ranks whose intervals were dropped
    (analysis.digest, beyond the first ranks) are left out. Most exposed first."""
    calls: dict[tuple[str | None, str | None], list[tuple[float, float]]] = defaultdict(list)
    steps = 0
    for rank, windows in per_rank:
        if rank.intervals_dropped:
            continue
        steps += len(windows)
        for call in rank.collectives:
            if call.purpose != GATHER or not any(w.start <= call.start < w.end for w in windows):
                continue
            hidden = total(clip(rank.compute, call.start, call.end))
            calls[(call.module, call.phase)].append((call.end - call.start, call.end - call.start - hidden))
    if not steps:
        return []
    found = [
        ModuleGathers(
            module or "root",
            phase,
            len(spans) / steps,
            sum(d for d, _ in spans) / steps / US_PER_MS,
            sum(e for _, e in spans) / steps / US_PER_MS,
        )
        for (module, phase), spans in calls.items()
    ]
    return sorted(found, key=lambda g: -g.exposed_ms)
