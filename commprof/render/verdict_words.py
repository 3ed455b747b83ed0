"""A sweep's verdict in words (results/report.Verdict; analysis/sweep.recommend decides it): the recommendation, and
the line to paste where a setting is recommended."""

from __future__ import annotations

import dataclasses

from commprof.kinds import KINDS, JobKind
from commprof.render.kind_words import describe, words_of
from commprof.results.common import PRACTICAL_SHARE, Result
from commprof.results.report import Report, SettingResult, SweepResult, Verdict


def paste_line(kind: JobKind, setting: SettingResult, framework: str, baseline: SettingResult | None = None) -> str:
    """What to write in the training script (or its config) for a measured setting, what differs from `baseline`'s."""
    return words_of(kind).paste(
        kind.options(**setting.options), framework, kind.options(**baseline.options) if baseline else None
    )


def baseline_words(baseline: SettingResult, own: bool, kind: JobKind) -> tuple[str, str]:
    """What the recommendation calls the baseline, and what it was: a script's own setting by what the script
    passed (or its DeepSpeed config) and the buckets DDP built for it; another by its label and buckets. Never 'the
    default': an explicit bucket_cap_mb, 25 included, is not DDP's default (kinds/ddp_buckets.py)."""
    buckets = f"DDP built {describe(baseline.bucket_sizes)}" if baseline.bucket_sizes else ""
    if not own:
        return "the baseline", f"{baseline.label}: {buckets}" if buckets else baseline.label
    written = f"{baseline.label}, as written: {words_of(kind).written(baseline.options)}"
    if not kind.reads_ddp:
        return f"the script's own {kind.own_name}", written
    buckets = buckets or "DDP's buckets not recorded"
    return f"the script's own {kind.own_name}", f"{written}; {buckets}"


def verdict_words(sweep: SweepResult) -> tuple[str, str | None]:
    """The recommendation and the line to paste (None: keep the baseline); a sweep written before verdicts were
    facts: its own words."""
    verdict = sweep.verdict
    if verdict is None:
        return sweep.recommendation, sweep.paste
    kind = KINDS[sweep.strategy]
    by_label = {s.label: s for s in sweep.settings}
    baseline, best, fastest = by_label[sweep.baseline], by_label[sweep.best], by_label[verdict.fastest]
    name, what = baseline_words(baseline, verdict.own, kind)
    gain = best.speedup
    ci = f"{gain.value:.2f}x (95% CI {gain.low:.2f}-{gain.high:.2f})"
    outcome = verdict.outcome
    if outcome in ("same_options", "same_buckets"):
        same = (
            f"ran with the same {kind.short} options as" if outcome == "same_options" else "builds the same buckets as"
        )
        return (
            f"The fastest, {best.label}, {same} {name} ({what}): it is the same setting, and {ci} is the noise between "
            f"repeats of it. Keep {name}."
        ), None
    step = f"{baseline.step_ms.value:.1f} ms per step"
    if outcome == "barely_matters":
        return _barely_matters(verdict, baseline, kind, name, f"{what}; {step}"), None
    if outcome == "baseline_fastest":
        return f"{name[0].upper()}{name[1:]} ({what}; {step}) is the fastest setting measured. Keep it.", None
    if outcome == "no_better":
        return (
            f"No setting is significantly better than {name} ({what}; {step}) by {PRACTICAL_SHARE:.0%} of the step or "
            f"more: the fastest, {best.label}, is {ci}. Keep {name}."
        ), None
    against = f"{name} ({what})" if verdict.own else f"{name}, {baseline.label}"  # a script's own: what it was
    found = (
        f"{best.step_ms.value:.1f} ms per step vs {baseline.step_ms.value:.1f} ms for {against}, {gain.value:.2f}x "
        f"faster (95% CI {gain.low:.2f}-{gain.high:.2f})"
    )
    confirmed = sweep.confirmed
    if outcome == "did_not_hold" and confirmed is not None:
        again = confirmed.speedup
        return (
            f"{best.label} ran {found} in the sweep's launches, but did not hold in {confirmed.pairs} fresh "
            f"interleaved pairs of launches against it: {again.value:.2f}x (95% CI {again.low:.2f}-{again.high:.2f}). "
            f"Keep {name}."
        ), None
    held = (
        f" It held in {confirmed.pairs} fresh interleaved pairs of launches: {confirmed.speedup.value:.2f}x (95% CI "
        f"{confirmed.speedup.low:.2f}-{confirmed.speedup.high:.2f})."
        if confirmed is not None
        else ""
    )
    larger = (
        f" {fastest.label} ran {fastest.step_ms.value:.1f} ms per step ({fastest.speedup.value:.2f}x), not faster "
        "beyond the noise: the larger size is named, which a rerun's noise does not flip."
        if fastest is not best
        else ""
    )
    text = f"{best.label} is best: {found}, {100 * (1 - 1 / gain.value):.0f}% less step time.{larger}{held}"
    return text, paste_line(kind, best, verdict.framework, baseline)


def _barely_matters(verdict: Verdict, baseline: SettingResult, kind: JobKind, name: str, what: str) -> str:
    """No setting differs from the baseline beyond the noise, either way: how far the noise reaches, said plainly."""
    subject = (
        f"{kind.short}'s {kind.size_knob} barely matters"
        if verdict.knob_only
        else "the settings measured barely matter"
    )
    noise = "the noise between launches" if baseline.launches else "the noise between repeats"
    return (
        f"{subject[0].upper()}{subject[1:]} for this model here: every setting is within ±{verdict.spread_pct:.0f}% of "
        f"{name} ({what}), {noise}. Keep {name}."
    )


def with_verdict_words(result: Result) -> Result:
    """A report whose sweep carries its verdict's words too (recommendation, paste), for report.json's readers."""
    if not isinstance(result, Report) or result.sweep is None:
        return result
    text, paste = verdict_words(result.sweep)
    return dataclasses.replace(result, sweep=dataclasses.replace(result.sweep, recommendation=text, paste=paste))


def refined(max_rounds: int) -> str:
    """What a tune measures after its first round (analysis/tune.refine_around: two sizes a round)."""
    return f"then at most {2 * (max_rounds - 1)} more sizes around the best"
