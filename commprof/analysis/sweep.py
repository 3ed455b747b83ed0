"""sweep.json (timed steps per setting) + each setting's traces -> SweepResult with a recommendation."""

from __future__ import annotations

import dataclasses
import statistics
from typing import Any

from commprof.analysis.buckets import backward_times, bucket_timelines, median_timeline
from commprof.analysis.stats import PRACTICAL_SHARE, difference_ci, median_ci, real_speedup, speedup_ci
from commprof.kinds import DDP, KINDS, JobKind, kind_of
from commprof.kinds.ddp_buckets import describe
from commprof.results.report import DDPCrossCheck, Report, SettingResult, SweepResult
from commprof.results.sweep_record import MeasuredSetting, SweepRecord
from commprof.settings import SettingOptions, setting_label
from commprof.trace.model import RankTrace
from commprof.trace.rules import FSDP_PURPOSE

NS_PER_MS = 1e6


def _bucket_sizes(ddp: dict[str, Any]) -> list[int]:
    text = ddp.get("rebuilt_bucket_sizes") or ddp.get("bucket_sizes") or ""
    return [int(part) for part in str(text).split(",") if part.strip()]


def _ms(ddp: dict[str, Any], key: str) -> float | None:
    value = ddp.get(key)
    return value / NS_PER_MS if isinstance(value, (int, float)) and value > 0 else None


def paste_line(options: SettingOptions, framework: str = "script", baseline: SettingOptions | None = None) -> str:
    """What to write in the training script (or its DeepSpeed config) for this setting (commprof.kinds)."""
    return kind_of(options).paste(options, framework, baseline)


def setting_result(
    label: str,
    measured: MeasuredSetting,
    baseline_steps: list[float],
    report: Report,
    rank0: RankTrace | None,
    strategy: str = "ddp",
    turn: int = 1,
) -> SettingResult:
    """`turn`: a setting's timed steps per repeat, resampled together (stats.speedup_ci)."""
    estimate, gain = median_ci(measured.step_ms), speedup_ci(baseline_steps, measured.step_ms, turn=turn)
    comm = statistics.fmean(r.comm_ms for r in report.ranks)
    overlap = statistics.fmean(r.overlap_ms for r in report.ranks)
    ddp0 = measured.ddp.get("0", {})
    ddp = KINDS[strategy].reads_ddp  # buckets and DDP's own figures: DDP's settings only
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
        speedup=gain,
        significant=real_speedup(gain),
        exposed_comm_ms=statistics.fmean(r.exposed_comm_ms for r in report.ranks),
        overlap_pct=100 * overlap / comm if comm > 0 else 0.0,
        allreduce_calls_per_step=sum(c.calls_per_step for c in report.collectives if c.op == "all_reduce"),
        gathers_per_step=sum(c.calls_per_step for c in report.collectives if c.purpose == FSDP_PURPOSE["all_gather"]),
        traces=label,
        timeline=median_timeline(timelines),
        gain_ms=difference_ci(measured.step_ms, baseline_steps, turn=turn),
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


def baseline_words(baseline: SettingResult, own: bool, kind: JobKind = DDP) -> tuple[str, str]:
    """What the recommendation calls the baseline, and what it was: a script's own setting by what the script
    passed (or its DeepSpeed config) and the buckets DDP built for it; another by its label and buckets. Never 'the
    default': an explicit bucket_cap_mb, 25 included, is not DDP's default (kinds/ddp_buckets.py)."""
    buckets = f"DDP built {describe(baseline.bucket_sizes)}" if baseline.bucket_sizes else ""
    if not own:
        return "the baseline", f"{baseline.label}: {buckets}" if buckets else baseline.label
    written = f"{baseline.label}, as written: {kind.written(baseline.options)}"
    if not kind.reads_ddp:
        return f"the script's own {kind.own_name}", written
    buckets = buckets or "DDP's buckets not recorded"
    return f"the script's own {kind.own_name}", f"{written}; {buckets}"


def recommend(
    settings: list[SettingResult],
    baseline: SettingResult,
    options: dict[str, SettingOptions],
    framework: str = "script",
    own: bool = False,
    named: SettingResult | None = None,
) -> tuple[str, str | None]:
    """The recommendation and the line to paste (None: keep the baseline). `own`: the baseline is a script's own
    setting, the script as written; `named`: the setting to name where not the fastest (_named_best)."""
    fastest = min(settings, key=lambda s: s.step_ms.value)
    best = named or fastest
    gain = best.speedup
    kind = kind_of(options[baseline.label])
    name, what = baseline_words(baseline, own, kind)
    if best.label != baseline.label and not kind.reads_ddp and best.options == baseline.options:
        return (
            f"The fastest, {best.label}, ran with the same {kind.short} options as {name} ({what}): it is the same "
            "setting, "
            f"and {gain.value:.2f}x (95% CI {gain.low:.2f}-{gain.high:.2f}) is the noise between repeats of it. "
            f"Keep {name}."
        ), None
    if best.label != baseline.label and best.same_buckets(baseline):
        return (
            f"The fastest, {best.label}, builds the same buckets as {name} ({what}): it is the same setting, and "
            f"{gain.value:.2f}x (95% CI {gain.low:.2f}-{gain.high:.2f}) is the noise between repeats of it. "
            f"Keep {name}."
        ), None
    if best.label == baseline.label:
        return (
            f"{name[0].upper()}{name[1:]} ({what}; {baseline.step_ms.value:.1f} ms per step) is the fastest "
            "setting measured. Keep it."
        ), None
    if not best.significant or gain.value <= 1:
        return (
            f"No setting is significantly better than {name} ({what}; {baseline.step_ms.value:.1f} ms per step) by "
            f"{PRACTICAL_SHARE:.0%} of the step or more: the fastest, {best.label}, is {gain.value:.2f}x (95% CI "
            f"{gain.low:.2f}-{gain.high:.2f}). Keep {name}."
        ), None
    against = f"{name} ({what})" if own else f"{name}, {baseline.label}"  # a script's own: what it was
    return (
        f"{best.label} is best: {best.step_ms.value:.1f} ms per step vs {baseline.step_ms.value:.1f} ms for "
        f"{against}, {gain.value:.2f}x faster (95% CI {gain.low:.2f}-{gain.high:.2f}), "
        f"{100 * (1 - 1 / gain.value):.0f}% less step time."
        + (
            f" {fastest.label} ran {fastest.step_ms.value:.1f} ms per step, not faster beyond the noise: the larger "
            "size is named, which a rerun's noise does not flip."
            if best is not fastest
            else ""
        )
    ), paste_line(options[best.label], framework, options[baseline.label])


def _named_best(
    results: list[SettingResult], baseline: SettingResult, steps: dict[str, list[float]], turn: int, kind: JobKind
) -> SettingResult:
    """The setting a sweep names: the fastest; but where it is a claim, of the settings better than the baseline
    beyond the noise that are not slower than the fastest beyond it, the one with the largest bucket size (the fewest
    calls), as the bucket_cap finding names its cap, so that a rerun's noise does not flip the advice between two
    sizes that run alike."""
    fastest = min(results, key=lambda s: s.step_ms.value)
    if fastest is baseline or not (fastest.significant and fastest.speedup.value > 1):
        return fastest
    alike = [
        s
        for s in results
        if s is not baseline
        and s.significant
        and s.speedup.value > 1
        and not real_speedup(speedup_ci(steps[s.label], steps[fastest.label], turn=turn))
    ]
    return max(alike, key=lambda s: (kind.size(s.options), -s.step_ms.value))


def sweep_result(record: SweepRecord, analysed: dict[str, tuple[Report, RankTrace | None]], kind: str) -> SweepResult:
    strategy = record.plan.run.strategy
    job = KINDS[strategy]
    planned = record.plan.baseline
    baseline_label = setting_label(planned)
    own = job.is_as_written(planned)
    baseline_steps = record.settings[baseline_label].step_ms
    turn = record.plan.steps_per_repeat  # the replicates are the repeats (a script's: a launch each), not the steps
    results = [
        setting_result(label, setting, baseline_steps, *analysed[label], strategy, turn)
        for label, setting in record.settings.items()
    ]
    # a script's own setting first, then by cap
    results.sort(key=lambda s: (not (own and s.label == baseline_label), job.size(s.options), s.label))
    baseline = next(s for s in results if s.label == baseline_label)
    options = {label: job.options(**setting.options) for label, setting in record.settings.items()}
    named = _named_best(results, baseline, {label: m.step_ms for label, m in record.settings.items()}, turn, job)
    text, paste = recommend(results, baseline, options, record.built_by, own, named)
    best = named.label
    results = [dataclasses.replace(s, best=s.label == best) for s in results]
    return SweepResult(
        kind=kind,
        baseline=baseline_label,
        best=best,
        settings=results,
        recommendation=text,
        paste=paste,
        rounds=record.rounds,
        timings=record.timings,
        strategy=strategy,
    )
