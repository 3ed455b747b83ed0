"""RunTrace -> Report: the one analysis that `run`, `analyze` and every later command share."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime, timezone

from commprof.analysis.breakdown import breakdown_step, step_windows, summarize_rank
from commprof.analysis.collectives import collective_stats, with_zero_purposes, with_zero_redundancy_purposes
from commprof.analysis.crossrank import Matching, MeasuredClocks, cross_rank, match_collectives
from commprof.analysis.distortion import job_drift_ms, job_step, profiler_distortion
from commprof.analysis.evidence import Evidence
from commprof.analysis.finding_kinds import checked
from commprof.analysis.findings import findings
from commprof.analysis.groups import dimension_times, stage_waits
from commprof.analysis.incomplete import missing_ranks
from commprof.analysis.models import model_accounts
from commprof.analysis.network import network_of
from commprof.analysis.phases import gathers_by_module, micro_steps, phase_means
from commprof.analysis.short_window import short_window
from commprof.analysis.whole_run import lateness_ledger, whole_run
from commprof.config import ProfileSchedule
from commprof.errors import UsageError
from commprof.results.finding_facts import LinkSource
from commprof.results.job import BuiltDeepSpeed
from commprof.results.rank_facts import Unfinished
from commprof.results.report import CollectiveStats, Report, SkippedFileInfo, StepBreakdown, StepTimeline
from commprof.results.run_record import RunRecord, RunSummary
from commprof.results.step_ledger import RankLedger
from commprof.results.whole_run import WholeRun
from commprof.trace.intervals import clip
from commprof.trace.model import RankTrace, RunTrace, Step
from commprof.trace.rules import ZERO_REDUNDANCY


@dataclass(frozen=True)
class RunAnalysis:
    report: Report
    windows: list[tuple[RankTrace, list[Step]]]  # each analysed rank with its step windows
    matching: Matching | None  # the collectives matched across ranks, once (None with one rank)


def analyze(
    trace: RunTrace, name: str, kind: str, run: RunSummary | None = None, clocks: MeasuredClocks | None = None
) -> Report:
    return analyze_run(trace, name, kind, run, clocks).report


def analyze_run(
    trace: RunTrace,
    name: str,
    kind: str,
    run: RunSummary | None = None,
    clocks: MeasuredClocks | None = None,
    breakdowns: dict[str, tuple[StepBreakdown, ...]] | None = None,
) -> RunAnalysis:
    """`breakdowns`: per trace file, computed where it was loaded (analysis.digest), possibly before its
    rank was numbered; the others are computed here."""
    summaries, steps, per_rank = [], [], []
    warnings = list(trace.warnings)
    skipped = [SkippedFileInfo(s.path, s.reason) for s in trace.skipped]
    for rank in sorted(trace.ranks, key=lambda r: r.rank):
        windows = step_windows(rank)
        if not windows:
            skipped.append(SkippedFileInfo(str(rank.path), "no events"))
            continue
        names = {w.name for w in windows}
        known = [
            dataclasses.replace(b, rank=rank.rank) for b in (breakdowns or {}).get(rank.path, ()) if b.step in names
        ]
        rank_steps = known or [breakdown_step(rank, w) for w in windows]
        summaries.append(summarize_rank(rank, rank_steps))
        steps += rank_steps
        per_rank.append((rank, windows))
        warnings += rank.warnings
    if not summaries:
        reasons = "; ".join(f"{s.path}: {s.reason}" for s in trace.skipped) or "no usable events"
        raise UsageError(f"nothing to analyse: {reasons}")
    matching = match_collectives(per_rank, clocks) if len(per_rank) > 1 else None
    collectives = collective_stats(per_rank)
    dimensions = dimension_times(per_rank)
    missing = missing_ranks(trace, run)
    report = Report(
        name=name,
        kind=kind,
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        sources=[r.path for r in trace.ranks],
        ranks=summaries,
        collectives=purposed(collectives, run),
        steps=steps,
        run=run,
        skipped=skipped,
        warnings=warnings,
        timeline=_typical_step(per_rank, steps),
        dimensions=dimensions,
        pipeline=stage_waits(dimensions, {s.rank: s.step_time_ms.mean for s in summaries}),
        short_window=short_window(run),
        cross_rank=cross_rank(matching, per_rank, {s.rank: s.step_time_ms.median for s in summaries}),
        missing_ranks=missing,
        empty_steps={str(r.rank): list(r.empty_steps) for r, _ in per_rank if r.empty_steps},
        phases=phase_means(steps),
        micro_steps=micro_steps(steps),
        gathers=gathers_by_module(per_rank),
        models=model_accounts(run, per_rank),
    )
    return RunAnalysis(report, per_rank, matching)


def purposed(collectives: list[CollectiveStats], run: RunSummary | None) -> list[CollectiveStats]:
    """The collectives named by what the run's framework uses them for: DeepSpeed's ZeRO, torch's
    ZeroRedundancyOptimizer."""
    if run is not None and run.job.first(BuiltDeepSpeed):
        return with_zero_purposes(collectives)
    if run is not None and (run.optimizer or "").endswith(ZERO_REDUNDANCY):
        return with_zero_redundancy_purposes(collectives)
    return collectives


def finished_report(
    analysis: RunAnalysis,
    record: RunRecord | None,
    unfinished: Unfinished | None = None,
    ceiling: tuple[float, LinkSource] | None = None,
    ledgers: dict[int, RankLedger] | None = None,
) -> Report:
    """The report `run` and `analyze` write: the analysis, with what the run's own record adds (the profiler's
    cost, the run's notes, the job's drift, every step of the run) and the findings. `record`: None for traces
    from elsewhere; `unfinished`: what the report covers of a run that did not complete; `ceiling`: as for
    analysis.findings; `ledgers`: the ranks' whole-run records (results/step_ledger.py)."""
    schedule = record.config.schedule if record and record.config.profiled else None
    compiled = frozenset(record.compiled.steps) if record and record.compiled else frozenset()
    ledgers = {rank: ledger for rank, ledger in (ledgers or {}).items() if ledger.steps}
    late = lateness_ledger(ledgers, schedule, compiled)
    whole = whole_run(ledgers, schedule, compiled, late)
    window = whole.window if whole is not None else None
    side = whole.stretch_of(window.first_step, window.last_step) if whole is not None and window is not None else None
    side_steps = (side.first_step, side.last_step) if side is not None else None
    report = dataclasses.replace(
        analysis.report,
        whole_run=whole,
        network=network_of(analysis.report, analysis.windows, _probed_apart(whole, schedule), analysis.matching),
    )
    job = job_step(record, side_steps) if record else None
    warnings = [*report.warnings, *(record.notes if record else [])]  # the breakdown states the profiler's cost
    drift = job_drift_ms(record, side_steps) if record else 0.0
    evidence = Evidence(report, analysis.windows, analysis.matching, job, ceiling, drift, late.waits, late.core)
    found, within_noise = findings(evidence)
    return dataclasses.replace(
        report,
        unfinished=unfinished,
        warnings=warnings,
        profiler_distortion=profiler_distortion(record, side_steps) if record else [],
        job_step=job,
        findings=found,
        within_noise=within_noise,
        checked=checked(record.job if record else None),
    )


def _probed_apart(whole: WholeRun | None, schedule: ProfileSchedule | None) -> int | None:
    """The first change of the run (of its step or its communication) after the profiled window: the link probe,
    taken at the run's end, measured the link of the stretch after it, not the one the window's collectives crossed.
    None where the run did not change after its window."""
    if whole is None or schedule is None:
        return None
    return next((c.step for c in whole.changes if c.step > schedule.total), None)


MAX_TIMELINE_INTERVALS = 2000


def _typical_step(per_rank, steps: list[StepBreakdown]) -> StepTimeline | None:
    """Rank 0's (or the first rank's) step with the median duration: what a typical step looks like."""
    if not per_rank:
        return None
    rank, windows = per_rank[0]
    mine = sorted((s for s in steps if s.rank == rank.rank), key=lambda s: s.window_ms)
    name = mine[len(mine) // 2].step
    window = next(w for w in windows if w.name == name)

    def relative(intervals):
        return [
            [(a - window.start) / 1000, (b - window.start) / 1000]
            for a, b in clip(intervals, window.start, window.end)[:MAX_TIMELINE_INTERVALS]
        ]

    return StepTimeline(
        rank.rank, name, (window.end - window.start) / 1000, relative(rank.compute), relative(rank.communication)
    )
