"""`commprof advise RUN`: the run's findings that are settings, measured against the setting the run used in
one interleaved sweep (commands.sweep), with each predicted gain beside the measured one."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from commprof.commands.outcome import SILENT, Feedback, Outcome
from commprof.errors import UsageError
from commprof.plans import ADVISE_TOP, MEASURED_AS_USUAL, SweepOptions
from commprof.results.run_record import RunSummary
from commprof.results.store import load_report
from commprof.settings import DDPOptions, SettingOptions, fsdp_as_written, own_setting, setting_label


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
    from commprof.analysis.evidence import current_options
    from commprof.analysis.fsdp_findings import fsdp_options
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
    advised = [f for f in report.findings if f.setting][:top]
    if not advised:
        raise UsageError(
            f"{run}: no finding of this run is a setting to try: nothing to advise "
            f"({len(report.findings)} finding(s); see its report)"
        )
    baseline: SettingOptions
    if config.script and report.run.deepspeed_built:  # ZeRO's findings, set in the config the script gives DeepSpeed
        baseline = config.deepspeed
        rerun = dataclasses.replace(config, strategy="deepspeed")
    elif config.script and report.run.horovod_built:  # Horovod's, set in its environment
        baseline = config.horovod
        rerun = dataclasses.replace(config, strategy="horovod")
    elif fsdp_options(report.run) is not None:  # FSDP's, on its fully_shard calls
        baseline = fsdp_as_written(config.fsdp) if config.script else config.fsdp
        rerun = dataclasses.replace(config, strategy="fsdp")
    else:
        ddp = ran_with(report.run) if config.script else current_options(report)[0]
        baseline, rerun = ddp, dataclasses.replace(config, ddp=ddp)
    settings = [_for(baseline, f.setting) for f in advised]
    predicted = {setting_label(s): f.gain_ms for s, f in zip(settings, advised, strict=False) if f.gain_ms is not None}
    request = rerun.request(
        run_id=run_id or f"{config.run_id}-advise", reports_dir=reports_dir, max_steps=max_steps, script_output=None
    )
    feedback.info(
        f"advise {request.run_id}: {len(settings)} setting(s) from the findings of {config.run_id} against "
        f"its own, {setting_label(baseline)}"
    )
    return measure(request, [baseline, *settings], baseline, "advise", feedback, options, predicted=predicted)


def ran_with(run: RunSummary) -> DDPOptions:
    """What a script's run applied to its DDP, as a setting: the script as written (config.own_setting) with the
    options the run set on top, its bucket_cap_mb only if it set one. Launched like the run, it builds the same: with
    --ddp-model, the cap it set on that model, and the others' as the run gave them."""
    target = run.config.ddp.ddp_model
    built = next((b for b in run.ddp_built if b.label == target), run.ddp_built[0] if run.ddp_built else None)
    others = [b for b in run.ddp_built if b is not built and "bucket_cap_mb" in b.applied]
    return dataclasses.replace(
        own_setting(run.config.ddp),
        bucket_cap_mb=_cap(built.applied) if built else None,
        others_bucket_cap_mb=_cap(others[0].applied) if target and others else None,
    )


def _cap(applied: dict[str, Any]) -> float | None:
    return float(applied["bucket_cap_mb"]) if applied.get("bucket_cap_mb") is not None else None


def _for(baseline: SettingOptions, setting: dict[str, Any]) -> SettingOptions:
    """A finding's setting on top of the run's own; one for one DDP model of several keeps the cap the run gave the
    others (the run's --bucket-cap-mb capped every model), so that it changes that model's alone."""
    cap = getattr(baseline, "bucket_cap_mb", None)  # DDP's (a ddp_model is one DDP's)
    if "ddp_model" in setting and cap is not None and getattr(baseline, "ddp_model", None) is None:
        return dataclasses.replace(baseline, others_bucket_cap_mb=cap, **setting)
    return dataclasses.replace(baseline, **setting)
