"""`commprof advise RUN`: the run's findings that are settings, measured against the setting the run used in
one interleaved sweep (commands.sweep), with each predicted gain beside the measured one."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from commprof.analysis.finding_kinds import BY_NAME
from commprof.commands.outcome import SILENT, Feedback, Outcome
from commprof.errors import UsageError
from commprof.kinds import job_kinds
from commprof.plans import ADVISE_TOP, MEASURED_AS_USUAL, SweepOptions
from commprof.render import progress_words
from commprof.results.store import load_report
from commprof.settings import SettingOptions, setting_label


def advise(
    run: str | Path,
    reports_dir: Path,
    feedback: Feedback = SILENT,
    top: int = ADVISE_TOP,
    run_id: str | None = None,
    max_steps: int | None = None,
    options: SweepOptions = MEASURED_AS_USUAL,
) -> Outcome:
    """`run`: a run id under `reports_dir`, or a report.json (or its folder). `max_steps`: with a script, every
    launch's optimizer steps (as for sweep). `options`: how each setting is measured, as for sweep."""
    from commprof.commands.sweep import measure

    if top < 1:
        raise UsageError(f"--top must be >= 1, got {top}")
    report = load_report(Path(run), reports_dir)
    if report.kind != "run" or report.run is None:
        raise UsageError(
            f"{run}: advise needs the report of a `commprof run` (it reruns that job); this is a "
            f"`commprof {report.kind}` report"
        )
    config = report.run.config
    settable = [f for f in report.findings if f.setting]
    if not settable:
        raise UsageError(
            f"{run}: no finding of this run is a setting to try: nothing to advise "
            f"({len(report.findings)} finding(s); see its report)"
        )
    # one sweep measures one kind's settings: the top finding's kind (of a job of several kinds, its others wait)
    kind = next((k for k in job_kinds(report.run.job) if BY_NAME[settable[0].kind].job == k.strategy), None)
    if kind is None:
        raise UsageError(f"{run}: its finding {settable[0].kind} is no setting of the kind of job it ran")
    advised = [f for f in settable if BY_NAME[f.kind].job == kind.strategy][:top]
    baseline = kind.baseline(report.run)
    rerun = kind.configured(dataclasses.replace(config, strategy=kind.strategy), baseline)
    settings = [_for(baseline, f.setting) for f in advised]
    predicted = {setting_label(s): f.gain_ms for s, f in zip(settings, advised, strict=False) if f.gain_ms is not None}
    request = rerun.request(
        run_id=run_id or f"{config.run_id}-advise", reports_dir=reports_dir, max_steps=max_steps, script_output=None
    )
    feedback.info(
        progress_words.advise_plan(str(request.run_id), len(settings), config.run_id, setting_label(baseline))
    )
    return measure(request, [baseline, *settings], baseline, "advise", feedback, options, predicted=predicted)


def _for(baseline: SettingOptions, setting: dict[str, Any]) -> SettingOptions:
    """A finding's setting on top of the run's own; one for one DDP model of several keeps the cap the run gave the
    others (the run's --bucket-cap-mb capped every model), so that it changes that model's alone."""
    cap = getattr(baseline, "bucket_cap_mb", None)  # DDP's (a ddp_model is one DDP's)
    if "ddp_model" in setting and cap is not None and getattr(baseline, "ddp_model", None) is None:
        return dataclasses.replace(baseline, others_bucket_cap_mb=cap, **setting)
    return dataclasses.replace(baseline, **setting)
