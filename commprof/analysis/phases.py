"""Each step split by phase: forward (from the step's start), backward (from its first backward op) and
optimizer (from its Optimizer.step), each phase's window broken down as the whole step is (breakdown); and
FSDP's parameter all-gathers by module, with what of them no computation hid."""

from __future__ import annotations

import statistics
from collections import defaultdict

from commprof.results.report import ModuleGathers, PhaseShare, StepBreakdown
from commprof.trace.intervals import clip, intersect, total
from commprof.trace.model import RankTrace, Step
from commprof.trace.roles import phase_bounds
from commprof.trace.rules import PHASES

US_PER_MS = 1000.0


def phase_shares(rank: RankTrace, step: Step) -> list[PhaseShare]:
    """The step's phases as the trace marks them ([] for a step it does not mark, or with no backward)."""
    mark = next(((b, o) for name, b, o in rank.phase_marks if name == step.name), (None, None))
    backward, optimizer = phase_bounds(step, *mark)
    if backward is None:
        return []
    bounds = [step.start, backward, step.end if optimizer is None else optimizer]
    shares = []
    for phase, start, end in zip(PHASES, bounds, [*bounds[1:], step.end], strict=False):
        compute, comm = clip(rank.compute, start, end), clip(rank.communication, start, end)
        overlap = total(intersect(compute, comm))
        shares.append(
            PhaseShare(
                phase,
                (end - start) / US_PER_MS,
                total(compute) / US_PER_MS,
                total(comm) / US_PER_MS,
                overlap / US_PER_MS,
                (total(comm) - overlap) / US_PER_MS,
            )
        )
    return shares


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
