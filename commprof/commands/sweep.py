"""`commprof sweep` and `commprof tune`: several DDP (or FSDP) settings measured, then compared: a built-in model
in one launch (worker.sweep), a script in one launch per setting and turn (commands.script_sweep)."""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

from commprof.commands.common import check_model, ddp_only, describe
from commprof.commands.outcome import SILENT, Feedback, Outcome
from commprof.commands.reporting import sweep_report, write_report
from commprof.config import DDPOptions, RunRequest, SettingOptions, SweepPlan, setting_label
from commprof.results.common import Estimate


def grid_settings(base: SettingOptions, grid: dict[str, list[Any]]) -> list[SettingOptions]:
    """Every combination of the listed values; each other option as in `base`."""
    return [
        dataclasses.replace(base, **dict(zip(grid, values, strict=False)))
        for values in itertools.product(*grid.values())
    ]


def sweep(request: RunRequest, grid: dict[str, list[Any]], feedback: Feedback = SILENT, **rounds: Any) -> Outcome:
    """`grid`: the strategy's options (DDP's, or FSDP's with --strategy fsdp) and the values each takes. `rounds`:
    SweepPlan's warmup_steps, repeats, steps_per_repeat, profile_steps and max_live_settings."""
    return measure(request, grid_settings(request.options, grid), request.options, "sweep", feedback, rounds)


def tune(request: RunRequest, feedback: Feedback = SILENT, **rounds: Any) -> Outcome:
    """A coarse log grid of bucket sizes first; rank 0 then refines around the best (analysis.tune)."""
    from commprof.analysis.tune import COARSE_GRID_MB

    ddp_only(request, "tune", " bucket sizes (FSDP's knobs: commprof sweep --strategy fsdp)")
    settings = grid_settings(request.ddp, {"bucket_cap_mb": list(COARSE_GRID_MB)})
    return measure(request, settings, request.ddp, "tune", feedback, rounds, tune=True)


def _distinct_buckets(settings: list[SettingOptions], baseline: SettingOptions, workload) -> list[SettingOptions]:
    from commprof.analysis.ddp_buckets import layout
    from commprof.analysis.tune import distinct_layouts

    assert isinstance(baseline, DDPOptions)  # tune is DDP's alone (ddp_only), and so is every setting
    sizes = workload.parameter_sizes
    caps = distinct_layouts(
        [s.bucket_cap_mb for s in settings if isinstance(s, DDPOptions)],
        baseline.bucket_cap_mb,
        lambda mb: layout(sizes, mb),
    )
    return [dataclasses.replace(baseline, bucket_cap_mb=mb) for mb in caps]


def measure(
    request: RunRequest,
    settings: list[SettingOptions],
    baseline: SettingOptions,
    kind: str,
    feedback: Feedback,
    rounds: dict[str, Any],
    tune: bool = False,
    predicted: dict[str, Estimate] | None = None,
) -> Outcome:
    """Resolve, check the model, launch the sweep worker once, analyse every setting, report. `predicted`: the
    gain predicted for some settings (by label), shown beside the measured one (commprof advise)."""
    from commprof.launch.job import Task, run_job
    from commprof.launch.resolve import MachineProbe, resolve
    from commprof.worker.sweep import sweep_main

    if baseline not in settings:
        settings = [*settings, baseline]
        feedback.info(f"added the default {setting_label(baseline)} as the baseline")
    if request.script:
        from commprof.commands.script_sweep import measure_script

        return measure_script(request, settings, baseline, kind, feedback, rounds, tune, predicted)
    config = resolve(request, MachineProbe.detect())
    workload = check_model(config, feedback)
    if tune:  # caps that build the same buckets are one setting: measured once
        settings = _distinct_buckets(settings, baseline, workload)
    plan = SweepPlan(run=config, settings=tuple(settings), baseline=baseline, tune=tune, **rounds)
    feedback.info(
        f"{kind} {config.run_id}: {describe(config, workload)}; "
        f"{len(settings)} settings x {plan.repeats} interleaved rounds"
    )
    per_setting = plan.warmup_steps + plan.repeats * plan.steps_per_repeat + plan.profile_steps + 1
    launched = run_job(config, Task(sweep_main, None, plan.to_dict()), per_setting * len(settings), feedback.watch)
    if not launched.has_rank_zero:
        return Outcome(
            None, note=f"ranks {', '.join(map(str, launched.ranks_here))} done; the node with rank 0 writes the report"
        )
    report = sweep_report(launched.run_dir, launched.run_id, kind, predicted)
    return Outcome(
        report, write_report(report, config.reports_dir, report.name, traces=launched.run_dir), traces=launched.run_dir
    )
