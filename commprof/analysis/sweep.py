"""sweep.json (timed steps per setting) + each setting's traces -> SweepResult with a recommendation."""

from __future__ import annotations

import dataclasses
import statistics
from typing import Any

from commprof.analysis.buckets import backward_times, bucket_timelines, median_timeline
from commprof.analysis.ddp_buckets import describe
from commprof.analysis.stats import PRACTICAL_SHARE, difference_ci, median_ci, real_speedup, speedup_ci
from commprof.results.report import DDPCrossCheck, Report, SettingResult, SweepResult
from commprof.results.sweep_record import MeasuredSetting, SweepRecord
from commprof.settings import (
    OPTIONS_OF_STRATEGY,
    DDPOptions,
    DeepSpeedOptions,
    FSDPOptions,
    SettingOptions,
    elements,
    setting_label,
)
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
    """What to write in the training script for this setting, in the terms of whatever built its DDP (or FSDP), or
    in the DeepSpeed config the script gives deepspeed.initialize (what differs from `baseline`'s)."""
    if isinstance(options, FSDPOptions):
        return fsdp_paste_line(options)
    if isinstance(options, DeepSpeedOptions):
        return zero_config_lines(options, baseline if isinstance(baseline, DeepSpeedOptions) else None)
    args = [f"bucket_cap_mb={options.bucket_cap_mb:g}"] if options.bucket_cap_mb is not None else []
    if options.gradient_as_bucket_view:
        args.append("gradient_as_bucket_view=True")
    if options.static_graph:
        args.append("static_graph=True")
    hook = f"default_hooks.{options.comm_hook}_compress_hook" if options.comm_hook != "none" else None
    if framework == "transformers":  # Trainer passes only the cap through; the other knobs need a DDP of one's own
        cap = f"ddp_bucket_cap_mb={options.bucket_cap_mb:g}" if options.bucket_cap_mb is not None else ""
        line = f"TrainingArguments(..., {cap})" if cap else "TrainingArguments(...)"
        extra = args[1 if cap else 0 :] + ([f"comm hook {options.comm_hook}"] if hook else [])
        return line + (f"  # and {', '.join(extra)}: not settable through TrainingArguments" if extra else "")
    if framework == "lightning":
        return f"DDPStrategy({', '.join(args + ([f'ddp_comm_hook={hook}'] if hook else []))})"
    line = f"DDP({', '.join(['model', *args])})"
    if hook:
        line += f"; ddp.register_comm_hook(None, {hook})"
    if options.grad_accum > 1:
        line += f"  # and all-reduce every {options.grad_accum} micro-batches (no_sync for the others)"
    return line


def zero_config_lines(options: DeepSpeedOptions, baseline: DeepSpeedOptions | None) -> str:
    """The "zero_optimization" entries to set in the script's DeepSpeed config (a dict or its JSON file), as JSON
    writes them: those in which the setting differs from `baseline` (the script's own config, as it ran)."""
    own = baseline.zero_config() if baseline else {}
    entries = {name: value for name, value in options.zero_config().items() if own.get(name) != value}
    text = ", ".join(f'"{name}": {_json_value(value)}' for name, value in entries.items())
    return f'"zero_optimization": {{{text}}}  # in the config given to deepspeed.initialize; the rest as it is'


def _json_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return elements(value) if isinstance(value, int) and value >= 1e4 else str(value)


def fsdp_paste_line(options: FSDPOptions) -> str:
    """fully_shard's arguments (each block, then the model) and each block's prefetch set."""
    args = ["each block, then the model"] + ([] if options.reshard_after_forward else ["reshard_after_forward=False"])
    if options.reduce_dtype != "fp32":
        dtype = {"bf16": "bfloat16", "fp16": "float16"}[options.reduce_dtype]
        args.append(f"mp_policy=MixedPrecisionPolicy(reduce_dtype=torch.{dtype})")
    parts = [f"fully_shard({', '.join(args)})"]
    if options.forward_prefetch:
        parts.append(f"blocks[i].set_modules_to_forward_prefetch(blocks[i + 1:i + {options.forward_prefetch + 1}])")
    if options.backward_prefetch > 1:
        depth = options.backward_prefetch
        parts.append(f"blocks[i].set_modules_to_backward_prefetch(blocks[max(0, i - {depth}):i][::-1])")
    return "; ".join(parts)


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
    ddp = strategy == "ddp"  # buckets and DDP's own figures: DDP's settings only
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


def baseline_words(baseline: SettingResult, own: bool) -> tuple[str, str]:
    """What the recommendation calls the baseline, and what it was: a script's own setting by what the script
    passed and the buckets DDP built for it; another by its label and buckets. Never 'the default': an explicit
    bucket_cap_mb, 25 included, is not DDP's default (analysis/ddp_buckets)."""
    buckets = f"DDP built {describe(baseline.bucket_sizes)}" if baseline.bucket_sizes else ""
    if not own:
        return "the baseline", f"{baseline.label}: {buckets}" if buckets else baseline.label
    if "zero_stage" in baseline.options:  # a DeepSpeed script's config, as it ran
        ran = DeepSpeedOptions(**baseline.options).zero_config()
        entries = ", ".join(f"{name} {_json_value(value)}" for name, value in ran.items()) or "not recorded"
        return "the script's own config", f"{baseline.label}, as written: zero_optimization {entries}"
    buckets = buckets or "DDP's buckets not recorded"
    cap = baseline.options.get("bucket_cap_mb")
    passed = (
        f"bucket_cap_mb={cap:g} as the script passes it"
        if cap is not None
        else "no bucket_cap_mb, so DDP's default: a 1 MiB first bucket, then 25 MiB"
    )
    return "the script's own setting", f"{baseline.label}, as written: {passed}; {buckets}"


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
    name, what = baseline_words(baseline, own)
    if best.label != baseline.label and "zero_stage" in best.options and best.options == baseline.options:
        return (
            f"The fastest, {best.label}, ran with the same ZeRO options as {name} ({what}): it is the same setting, "
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


def _size(options: dict[str, Any]) -> float:
    """The bucket size a setting sorts by: DDP's cap, or ZeRO's reduce_bucket_size."""
    return options.get("bucket_cap_mb") or options.get("reduce_bucket_size") or 0


def _named_best(
    results: list[SettingResult], baseline: SettingResult, steps: dict[str, list[float]], turn: int
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
    return max(alike, key=lambda s: (_size(s.options), -s.step_ms.value))


def sweep_result(record: SweepRecord, analysed: dict[str, tuple[Report, RankTrace | None]], kind: str) -> SweepResult:
    strategy = record.plan.run.strategy
    options_of = OPTIONS_OF_STRATEGY[strategy]
    planned = record.plan.baseline
    baseline_label = setting_label(planned)
    # a script as written: its DDP given no bucket_cap_mb (config.OWN_LABEL), its DeepSpeed config unchanged
    own = planned == DeepSpeedOptions() or (isinstance(planned, DDPOptions) and planned.bucket_cap_mb is None)
    baseline_steps = record.settings[baseline_label].step_ms
    turn = record.plan.steps_per_repeat  # the replicates are the repeats (a script's: a launch each), not the steps
    results = [
        setting_result(label, setting, baseline_steps, *analysed[label], strategy, turn)
        for label, setting in record.settings.items()
    ]
    # a script's own setting first, then by cap
    results.sort(key=lambda s: (not (own and s.label == baseline_label), _size(s.options), s.label))
    baseline = next(s for s in results if s.label == baseline_label)
    options = {label: options_of(**setting.options) for label, setting in record.settings.items()}
    named = _named_best(results, baseline, {label: m.step_ms for label, m in record.settings.items()}, turn)
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
