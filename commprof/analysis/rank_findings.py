"""Detectors of findings about ranks: an input stall (idle at the start of the steps, waiting for data), the
straggler (the rank whose lateness costs the others the most, with the part that is in excess on it) and the rank
that stalls now and then (its stand-out steps of the whole run)."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from typing import Any

from commprof.analysis.evidence import Evidence
from commprof.analysis.lateness import excess
from commprof.analysis.stats import mean_ci, median_ci, stratified_mean_ci
from commprof.results.rank_facts import InputStall, Stalls, Straggler
from commprof.results.report import Finding, Report, StepBreakdown
from commprof.results.whole_run import WholeRun
from commprof.trace.rules import PHASES

STALL_SHARE = 0.05  # a rank idle this share of the step before its first operator is stalled (below it: the
# Python between two steps, on every rank)


def input_stalls(evidence: Evidence) -> list[Finding]:
    """Idle at the start of the steps (waiting for the next batch), on every rank: the worst rank's, with its
    interval; the ranks whose median is at least STALL_SHARE of the step are listed (no interval per rank: a
    job has thousands)."""
    report, step_ms = evidence.report, evidence.step_ms
    by_rank: dict[int, list[float]] = defaultdict(list)
    for step in report.steps:
        by_rank[step.rank].append(step.start_idle_ms)
    if not by_rank or min(len(v) for v in by_rank.values()) < 2:
        return []
    medians = {rank: statistics.median(values) for rank, values in by_rank.items()}
    stalled = sorted(r for r, m in medians.items() if m >= STALL_SHARE * step_ms)
    if not stalled:
        return []
    rank = max(stalled, key=lambda r: medians[r])
    gain = median_ci(by_rank[rank])
    facts = InputStall(rank=rank, idle_ms=gain.value, stalled=stalled, ranks=len(by_rank))
    return [Finding(kind=facts.KIND, facts=facts, gain_ms=gain)]


def straggler(evidence: Evidence) -> list[Finding]:
    """The rank whose late arrivals make the others wait: the others' mean wait per step is what the job loses.
    The evidence's `waits`: per rank, what it made the others wait at each unprofiled step of the whole run
    (analysis/lateness.Ledger); the interval is taken over those steps and the profiled ones together, so that
    a rank slowed during the profiled window only (another process on its cores for a second) is not named.

    The evidence is per-step consistency within the run, wherever the rank's time goes (forward, backward, input):
    the gain is the median of its cost per step with the median's order-statistic interval, whose low end is above
    0 only when the rank made the others wait in (nearly) every step: in every one below six steps, in about two
    thirds of 50 (more once findings widen it for a rerun). Ranks that take turns on one host's cores, each late
    now and then, do not pass it. Returned whenever there are two steps to weigh: analysis/findings claims it (the
    interval excludes 0 and the cost is 3% of the step) or keeps it within the noise, and the report says which."""
    report, windows = evidence.report, evidence.windows
    cross = report.cross_rank
    if cross is None or cross.straggler is None:
        return []
    straggler = cross.straggler
    steps_of = {rank.rank: steps for rank, steps in windows}
    names = [s.name for s in steps_of.get(straggler, [])]
    own = _own_excess(report, straggler)
    # waiting for a core that something else held is the launch's, not the job's (lateness.core_wait_excess): the
    # profiled steps, whose records the traces are, lose its median over the unprofiled steps
    core = list(evidence.core_waits.get(straggler, {}).values())
    core_ms = statistics.median(core) if core else 0.0
    profiled = [
        max(0.0, min(cross.straggler_steps.get(name, 0.0), own.get(name, math.inf)) - core_ms) for name in names
    ]
    unprofiled = list(evidence.waits.get(straggler, {}).values())
    costs = profiled + unprofiled
    if len(costs) < 2:
        return []
    gain = median_ci(costs)
    excess = _excess(report, straggler)
    bounded = statistics.median(profiled) if profiled else math.inf
    part = max(excess, key=lambda p: excess[p])
    facts = Straggler(
        rank=straggler,
        cost_ms=cross.straggler_cost_ms,
        cost_by_op=dict(cross.straggler_ops),
        late_steps=sum(cost > EXCESS_FLOOR_MS for cost in costs),
        profiled_steps=len(profiled),
        unprofiled_steps=len(unprofiled),
        # the profiled steps' costs are capped by its own extra time outside communication
        bounded_ms=bounded if bounded < cross.straggler_cost_ms - EXCESS_FLOOR_MS else None,
        excess={part: ms for part, ms in excess.items() if part in CORE_PARTS or abs(ms) >= SHOWN_PART_MS},
        core_ms=core_ms,
        look_at=part if excess[part] > EXCESS_FLOOR_MS else "",
        look_at_ms=excess[part],
        phase=_phase_of_compute(report, straggler),
        gpu=any(r.kind == "gpu" for r in report.ranks if r.rank == straggler),
        **_waited_within(report, straggler),
    )
    return [Finding(kind=facts.KIND, facts=facts, gain_ms=gain)]


def _waited_within(report: Report, rank: int) -> dict[str, Any]:
    """On a job over several process groups, the rank's group whose other members waited the longest per step (the
    mean of their waits): where it is late, and who waits for it. Nothing where the job ran over one group."""
    waits = {r.rank: r.wait_ms for r in report.cross_rank.ranks} if report.cross_rank else {}
    best: tuple[float, str, list[int]] | None = None
    for dim in report.dimensions:
        for members in dim.groups:
            others = [waits[r] for r in members if r != rank and r in waits]
            if rank in members and others and (best is None or statistics.fmean(others) > best[0]):
                best = (statistics.fmean(others), dim.dimension, members)
    return {"group": best[1], "group_ranks": best[2]} if best is not None else {}


def _own_excess(report: Report, rank: int) -> dict[str, float]:
    """Per step: how much longer than the others' median this rank spent outside its exposed communication
    (computing, waiting for input, in Python), the most its lateness can cost them in that step. The waits charged
    to it at each collective add up to more where its buckets are in flight at once (Gloo runs two at a time)."""
    outside: dict[str, dict[int, float]] = defaultdict(dict)
    for s in report.steps:
        outside[s.step][s.rank] = s.window_ms - s.exposed_comm_ms
    return {step: excess(ranks, rank) for step, ranks in outside.items() if rank in ranks and len(ranks) > 1}


def _phase_of_compute(report: Report, rank: int) -> str | None:
    """The phase (forward, backward, optimizer) whose compute grew the most on `rank` against the others' median,
    where the steps are split by phase."""
    grew = _excess(report, rank, parts=tuple(f"{phase}_compute_ms" for phase in PHASES))
    part = max(grew, key=lambda p: grew[p])
    return part.removesuffix("_compute_ms") if grew[part] > EXCESS_FLOOR_MS else None


EXCESS_FLOOR_MS = 0.05  # below this, a part is not in excess
SHOWN_PART_MS = 0.5  # a phase's time outside operators is said in the evidence from this excess on
CORE_PARTS = ("compute_ms", "start_idle_ms", "exposed_comm_ms")  # always said
# the parts of a step, disjoint (render/rank_findings_text.PARTS names them): its compute, its exposed communication,
# and the time outside both, by where it falls
PARTS = (
    "compute_ms",
    "start_idle_ms",
    "exposed_comm_ms",
    "forward_idle_ms",
    "backward_idle_ms",
    "optimizer_idle_ms",
)


def part_ms(step: StepBreakdown, part: str) -> float:
    """One part of a step (PARTS): a figure of the step's, or a phase's (`<phase>_compute_ms`: its compute;
    `<phase>_idle_ms`: its time outside any operator and its exposed communication, the forward's after the step's
    idle start, which is the input's)."""
    name, _, what = part.partition("_")
    phase = next((p for p in step.phases if p.phase == name), None)
    if name not in PHASES:
        return float(getattr(step, part))
    if phase is None:
        return 0.0
    if what == "compute_ms":
        return phase.compute_ms
    idle = max(0.0, phase.window_ms - phase.compute_ms - phase.exposed_comm_ms)
    return max(0.0, idle - step.start_idle_ms) if phase.phase == "forward" else idle


def _excess(report: Report, rank: int, parts=tuple(PARTS)) -> dict[str, float]:
    """How much more of each part of the step this rank spends than the median of the other ranks (ms)."""

    def median_of(ranks: set[int], part: str) -> float:
        values = [part_ms(s, part) for s in report.steps if s.rank in ranks]
        return statistics.median(values) if values else 0.0

    others = {r.rank for r in report.ranks} - {rank}
    return {part: median_of({rank}, part) - median_of(others, part) for part in parts}


def stalls_now_and_then(evidence: Evidence) -> list[Finding]:
    return stalls_in(evidence.report.whole_run, evidence.waits)


def stalls_in(whole: WholeRun | None, waits: dict[int, dict[int, float]]) -> list[Finding]:
    """The rank that makes the others wait at a few steps only (its stand-out steps of the whole run): what the job
    loses is the mean over every step, carried by those few, which no profiled window of a few steps measures. A rank
    late at most steps is the straggler's finding instead (the median of its waits is then most of their mean).
    Stalls that come every N steps come as often in a rerun: the interval then holds their count and lets only
    their sizes and the other steps' waits move; stalls at no period may come more or less often."""
    if whole is None or whole.slow_rank is None or whole.slow_rank_steps < 2:
        return []
    rank = whole.slow_rank
    by_step = waits.get(rank, {})
    costs = list(by_step.values())
    if len(costs) < 2 or statistics.median(costs) >= statistics.fmean(costs) / 2:
        return []
    mine = [s for s in whole.standouts if s.rank == rank]
    mine = [s for s in mine if s.lost_ms >= max(m.lost_ms for m in mine) / 2]  # the stalls, not the jitter
    stalled = {s.step for s in mine}
    if whole.slow_rank_every:
        groups = [[w for step, w in by_step.items() if (step in stalled) is inside] for inside in (True, False)]
        gain = stratified_mean_ci(groups)
    else:
        gain = mean_ci(costs)
    waited = next((s for s in mine if s.collective), None)
    window = whole.window
    unseen = window is not None and window.standouts == 0
    facts = Stalls(
        rank=rank,
        steps=[s.step for s in mine],
        run_steps=whole.steps,
        lost_ms=statistics.fmean(s.lost_ms for s in mine),
        every=whole.slow_rank_every,
        waited_in=waited.collective if waited else None,
        waited_bytes=waited.collective_bytes if waited else None,
        window=(window.first_step, window.last_step) if window is not None and unseen else None,
        cost_ms=statistics.fmean(costs),
    )
    return [Finding(kind=facts.KIND, facts=facts, gain_ms=gain)]
