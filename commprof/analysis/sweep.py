"""sweep.json (timed steps per setting) + each setting's traces -> SweepResult with a recommendation."""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Callable
from typing import Any

from commprof.analysis import launch_stats
from commprof.analysis.buckets import backward_times, bucket_timelines, median_timeline
from commprof.analysis.stats import difference_ci, median_ci, real_speedup, speedup_ci
from commprof.kinds import KINDS, JobKind
from commprof.results.common import Estimate
from commprof.results.report import ConfirmedClaim, DDPCrossCheck, Report, SettingResult, SweepResult, Verdict
from commprof.results.sweep_record import Confirmation, MeasuredSetting, SweepRecord
from commprof.settings import setting_label
from commprof.trace.model import RankTrace
from commprof.trace.rules import FSDP_PURPOSE

NS_PER_MS = 1e6


def _bucket_sizes(ddp: dict[str, Any]) -> list[int]:
    text = ddp.get("rebuilt_bucket_sizes") or ddp.get("bucket_sizes") or ""
    return [int(part) for part in str(text).split(",") if part.strip()]


def _ms(ddp: dict[str, Any], key: str) -> float | None:
    value = ddp.get(key)
    return value / NS_PER_MS if isinstance(value, (int, float)) and value > 0 else None


def by_launch(measured: MeasuredSetting) -> launch_stats.Launches:
    """A script's setting: each timed launch's value by its round (launch_stats); a built-in model's: none."""
    return launch_stats.launch_values(measured.launches, measured.rounds)


def _compared(
    measured: MeasuredSetting, baseline: MeasuredSetting, turn: int
) -> tuple[Estimate, Estimate, Estimate, int]:
    """The setting's step, its speedup and gain in ms against the baseline, and its launches: a script's from its
    launches, paired by round (launch_stats); a built-in model's, all in one launch, from its steps (whole turns
    resampled)."""
    mine, theirs = by_launch(measured), by_launch(baseline)
    if mine and theirs:
        return (
            launch_stats.setting_step(mine),
            launch_stats.paired_speedup(theirs, mine),
            launch_stats.paired_gain_ms(theirs, mine),
            len(mine),
        )
    steps, base = measured.step_ms, baseline.step_ms
    return median_ci(steps), speedup_ci(base, steps, turn=turn), difference_ci(steps, base, turn=turn), 0


def setting_result(
    label: str,
    measured: MeasuredSetting,
    baseline: MeasuredSetting,
    report: Report,
    rank0: RankTrace | None,
    strategy: str = "ddp",
    turn: int = 1,
) -> SettingResult:
    """`turn`: a built-in model's timed steps per repeat, resampled together (stats.speedup_ci)."""
    estimate, gain, gain_ms, launches = _compared(measured, baseline, turn)
    comm = statistics.fmean(r.comm_ms for r in report.ranks)
    overlap = statistics.fmean(r.overlap_ms for r in report.ranks)
    ddp0 = measured.ddp.get("0", {})
    kind = KINDS[strategy]
    ddp = kind.reads_ddp  # buckets and DDP's own figures: DDP's settings only
    own: set[int | None] | None = None  # in a job of several kinds, the sizes of this kind's collectives alone
    if rank0 is not None and report.run is not None and report.run.job.kinds and not report.run.job.alone(strategy):
        rank0 = kind.own_collectives(rank0, report.run.job)
        own = {c.nbytes for c in rank0.collectives}
    timelines = bucket_timelines(rank0) if ddp and rank0 is not None else []
    from_trace = backward_times(rank0) if ddp and rank0 is not None else None
    sizes = _bucket_sizes(ddp0)
    return SettingResult(
        label=label,
        options=dict(measured.options),
        buckets=len(sizes),
        bucket_sizes=sizes,
        step_ms=estimate,
        samples=len(measured.step_ms),
        launches=launches,
        speedup=gain,
        significant=real_speedup(gain),
        exposed_comm_ms=statistics.fmean(r.exposed_comm_ms for r in report.ranks),
        overlap_pct=100 * overlap / comm if comm > 0 else 0.0,
        allreduce_calls_per_step=sum(
            c.calls_per_step for c in report.collectives if c.op == "all_reduce" and (own is None or c.bytes in own)
        ),
        gathers_per_step=sum(c.calls_per_step for c in report.collectives if c.purpose == FSDP_PURPOSE["all_gather"]),
        traces=label,
        timeline=median_timeline(timelines),
        gain_ms=gain_ms,
        ddp_check=DDPCrossCheck(
            _ms(ddp0, "avg_backward_compute_time"),
            _ms(ddp0, "avg_backward_comm_time"),
            _ms(ddp0, "avg_backward_compute_comm_overlap_time"),
            from_trace.compute_ms if from_trace else None,
            from_trace.comm_ms if from_trace else None,
            from_trace.overlap_ms if from_trace else None,
        )
        if ddp
        else None,
    )


def recommend(
    settings: list[SettingResult],
    baseline: SettingResult,
    kind: JobKind,
    framework: str = "script",
    own: bool = False,
    named: SettingResult | None = None,
    confirmed: ConfirmedClaim | None = None,
) -> Verdict:
    """What the measurements call for (render/verdict_words.py says it). `own`: the baseline is a script's own
    setting, the script as written; `named`: the setting to name where not the fastest (_named_best); `confirmed`:
    the named setting measured again against the baseline in fresh launches (a script's claim): it is recommended
    only where that holds."""
    fastest = _fastest(settings)
    best = named or fastest
    verdict = Verdict("best", fastest.label, own, framework)
    if best.label != baseline.label and not kind.reads_ddp and best.options == baseline.options:
        return dataclasses.replace(verdict, outcome="same_options")
    if best.label != baseline.label and best.same_buckets(baseline):
        return dataclasses.replace(verdict, outcome="same_buckets")
    others = [s for s in settings if s is not baseline]
    claim = best.label != baseline.label and best.significant and best.speedup.value > 1
    if not claim and others and not any(s.significant for s in others):
        varied = {k for s in others for k, v in s.options.items() if baseline.options.get(k) != v}
        spread = launch_stats.spread_pct([s.speedup for s in others])
        knob_only = bool(kind.size_knob) and varied <= {kind.size_knob}
        return dataclasses.replace(verdict, outcome="barely_matters", spread_pct=spread, knob_only=knob_only)
    if best.label == baseline.label:
        return dataclasses.replace(verdict, outcome="baseline_fastest")
    if not claim:
        return dataclasses.replace(verdict, outcome="no_better")
    if confirmed is not None and not confirmed.held:
        return dataclasses.replace(verdict, outcome="did_not_hold")
    return verdict


def _named_best(
    results: list[SettingResult],
    baseline: SettingResult,
    between: Callable[[str, str], Estimate],
    kind: JobKind,
) -> SettingResult:
    """The setting a sweep names: the fastest; but where it is a claim, of the settings better than the baseline
    beyond the noise that are not slower than the fastest beyond it (`between(a, b)`: a's step over b's), the one
    with the largest bucket size (the fewest calls), as the bucket_cap finding names its cap, so that a rerun's noise
    does not flip the advice between two sizes that run alike."""
    fastest = _fastest(results)
    if fastest is baseline or not (fastest.significant and fastest.speedup.value > 1):
        return fastest
    alike = [
        s
        for s in results
        if s is not baseline
        and s.significant
        and s.speedup.value > 1
        and not real_speedup(between(s.label, fastest.label))
    ]
    return max(alike, key=lambda s: (kind.size(s.options), s.speedup.value))


def _fastest(settings: list[SettingResult]) -> SettingResult:
    """The setting with the largest speedup over the baseline: a script's settings measured in different rounds (a
    tune's refinement) are compared through their ratios to the baseline of their own rounds, never by their steps
    (the host moves from round to round)."""
    return max(settings, key=lambda s: s.speedup.value)


def claimed(record: SweepRecord) -> str | None:
    """A script's sweep: the setting its launches name over the baseline, before it is confirmed; None where none
    beats it (the same rules as sweep_result, on the launches alone)."""
    job = KINDS[record.plan.run.strategy]
    own = setting_label(record.plan.baseline)
    launches = {label: by_launch(m) for label, m in record.settings.items()}
    better = {
        label: launch_stats.paired_speedup(launches[own], mine)
        for label, mine in launches.items()
        if label != own and mine and launch_stats.beats(launch_stats.paired_speedup(launches[own], mine))
    }
    if not better:
        return None
    fastest = max(better, key=lambda label: better[label].value)
    alike = [
        label
        for label in better
        if not real_speedup(launch_stats.relative_speedup(launches[own], launches[label], launches[fastest]))
    ]
    return max(alike, key=lambda label: (job.size(record.settings[label].options), better[label].value))


def confirmed_claim(confirmation: Confirmation) -> ConfirmedClaim:
    """The fresh pairs' verdict: the claimed setting beats the baseline in them alone."""
    rounds = [str(i) for i in range(len(confirmation.baseline))]
    base = launch_stats.launch_values(confirmation.baseline, rounds)
    mine = launch_stats.launch_values(confirmation.candidate, rounds)
    speedup = launch_stats.paired_speedup(base, mine)
    return ConfirmedClaim(
        setting=confirmation.setting,
        pairs=len(launch_stats.shared_rounds(base, mine)),
        speedup=speedup,
        gain_ms=launch_stats.paired_gain_ms(base, mine),
        held=launch_stats.beats(speedup),
    )


def sweep_result(record: SweepRecord, analysed: dict[str, tuple[Report, RankTrace | None]], kind: str) -> SweepResult:
    strategy = record.plan.run.strategy
    job = KINDS[strategy]
    planned = record.plan.baseline
    baseline_label = setting_label(planned)
    own = job.is_as_written(planned)
    measured_baseline = record.settings[baseline_label]
    turn = record.plan.steps_per_repeat  # a built-in model's replicates are its repeats, not its steps
    results = [
        setting_result(label, setting, measured_baseline, *analysed[label], strategy, turn)
        for label, setting in record.settings.items()
    ]
    # a script's own setting first, then by cap
    results.sort(key=lambda s: (not (own and s.label == baseline_label), job.size(s.options), s.label))
    baseline = next(s for s in results if s.label == baseline_label)
    named = _named_best(results, baseline, _between(record, turn), job)
    confirmed = record.confirmation
    check = confirmed_claim(confirmed) if confirmed is not None and confirmed.setting == named.label else None
    verdict = recommend(results, baseline, job, record.built_by, own, named, check)
    best = named.label
    results = [dataclasses.replace(s, best=s.label == best) for s in results]
    return SweepResult(
        kind=kind,
        baseline=baseline_label,
        best=best,
        settings=results,
        verdict=verdict,
        rounds=record.rounds,
        timings=record.timings,
        strategy=strategy,
        confirmed=check,
    )


def _between(record: SweepRecord, turn: int) -> Callable[[str, str], Estimate]:
    """How two settings' steps compare (a's over b's): a script's by its launches, paired by round; a built-in
    model's by its steps, whole turns resampled."""
    record_baseline = setting_label(record.plan.baseline)

    def compare(a: str, b: str) -> Estimate:
        mine, theirs = by_launch(record.settings[a]), by_launch(record.settings[b])
        if mine and theirs:
            return launch_stats.relative_speedup(by_launch(record.settings[record_baseline]), mine, theirs)
        return speedup_ci(record.settings[a].step_ms, record.settings[b].step_ms, turn=turn)

    return compare
