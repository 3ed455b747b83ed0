"""`commprof sweep` and `commprof tune`: several DDP (or FSDP, or a DeepSpeed script's ZeRO) settings measured,
then compared: a built-in model in one launch (worker.sweep), a script in one launch per setting and turn
(commands.script_sweep)."""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

from commprof.commands.common import check_model, describe, prepare_figures
from commprof.commands.launch_rounds import launch_budget, launched_again, least_launches
from commprof.commands.outcome import SILENT, Feedback, Outcome
from commprof.commands.reporting import sweep_report, write_report
from commprof.commands.script_kind import OtherKind
from commprof.config import RunRequest
from commprof.errors import UsageError
from commprof.kinds import DDP, KINDS
from commprof.plans import MEASURED_AS_USUAL, SweepOptions, SweepPlan, sweep_grid
from commprof.render import progress_words
from commprof.render.kind_words import words_of
from commprof.results.common import Estimate
from commprof.results.report import Report
from commprof.settings import SettingOptions, setting_label


def grid_settings(base: SettingOptions, grid: dict[str, list[Any]]) -> list[SettingOptions]:
    """Every combination of the listed values; each other option as in `base`."""
    return [
        dataclasses.replace(base, **dict(zip(grid, values, strict=False)))
        for values in itertools.product(*grid.values())
    ]


def baseline_of(request: RunRequest) -> SettingOptions:
    """What the other settings are measured against: a script's DDP as written (config.own_setting: commprof
    passes it no bucket_cap_mb, nor any option not given); a built-in model's, the request's own options."""
    if request.script:
        return KINDS[request.strategy].as_written(request.options)
    return request.options


def sweep(
    request: RunRequest,
    swept: dict[str, str],
    feedback: Feedback = SILENT,
    options: SweepOptions = MEASURED_AS_USUAL,
) -> Outcome:
    """`swept`: the values each swept option takes, comma-separated as given (plans.sweep_grid reads those of the
    request's strategy: DDP's, or FSDP's with --strategy fsdp); `options`: how each setting is measured."""
    grid = sweep_grid(request.strategy, swept)
    return measure(request, grid_settings(request.options, grid), baseline_of(request), "sweep", feedback, options)


def tune(request: RunRequest, feedback: Feedback = SILENT, options: SweepOptions = MEASURED_AS_USUAL) -> Outcome:
    """A coarse log grid of the kind's bucket size first (DDP's bucket_cap_mb, ZeRO's reduce_bucket_size); rank 0
    then refines around the best (analysis.tune). A kind without a bucket size (FSDP) has each of its knobs measured
    changed alone, in one round. A script that builds another kind than the default DDP has its own kind tuned."""
    kind = KINDS[request.strategy]
    if kind.size_knob is not None:
        settings = grid_settings(request.options, {kind.size_knob: list(kind.grid)})
    elif request.script and kind.knob_settings(request.options):
        settings = kind.knob_settings(request.options)
    else:
        raise UsageError(
            f"--strategy {request.strategy} is not for commprof tune of a built-in model ({words_of(kind).knobs}: "
            f"commprof sweep --strategy {request.strategy})"
        )
    try:
        return measure(
            request, settings, baseline_of(request), "tune", feedback, options, tune=kind.size_knob is not None
        )
    except OtherKind as other:
        built, what = other.built, other.what
        tunable = built is not None and (built.size_knob is not None or built.knob_settings(built.options()))
        if not tunable or not KINDS[request.strategy].default or not request.script:
            raise
    assert built is not None
    knob = f"{built.short}'s {built.size_knob}" if built.size_knob else words_of(built).knobs
    feedback.info(progress_words.tune_instead(what, knob, built.strategy))
    return tune(dataclasses.replace(request, strategy=built.strategy), feedback, options)


def _distinct_buckets(settings: list[SettingOptions], baseline: SettingOptions, workload) -> list[SettingOptions]:
    """A built-in model's tune (DDP's: the only built-in kind with a bucket size): one cap per bucket layout."""
    from commprof.analysis.tune import distinct_layouts
    from commprof.kinds.ddp_buckets import layout

    sizes = workload.parameter_sizes
    caps = distinct_layouts(
        [DDP.size(vars(s)) for s in settings], DDP.size(vars(baseline)), lambda mb: layout(sizes, mb)
    )
    return [DDP.sized(baseline, mb) for mb in caps]


def measure(
    request: RunRequest,
    settings: list[SettingOptions],
    baseline: SettingOptions,
    kind: str,
    feedback: Feedback,
    options: SweepOptions,
    tune: bool = False,
    predicted: dict[str, Estimate] | None = None,
) -> Outcome:
    """Resolve, check the model, launch the sweep worker once, analyse every setting, report. `predicted`: the
    gain predicted for some settings (by label), shown beside the measured one (commprof advise)."""
    from commprof.launch import forkserver

    forkserver.start_early(request)
    from commprof.analysis.tune import MAX_ROUNDS
    from commprof.launch.job import Task, run_job
    from commprof.launch.resolve import MachineProbe, resolve
    from commprof.render.verdict_words import refined
    from commprof.worker.sweep import sweep_main

    if request.script:
        from commprof.commands.script_sweep import measure_script

        return measure_script(request, settings, baseline, kind, feedback, options, tune, predicted)
    if request.max_steps is not None:
        raise UsageError(
            f"--max-steps is for a script (commprof {kind} -- train.py); a built-in model's {kind} runs "
            "--warmup-steps + --steps-per-repeat steps per setting and round"
        )
    if baseline not in settings:
        settings = [*settings, baseline]
        feedback.info(progress_words.baseline_added(setting_label(baseline)))
    config = resolve(request, MachineProbe.detect())
    workload = check_model(config, feedback)
    if tune:  # caps that build the same buckets are one setting: measured once
        settings = _distinct_buckets(settings, baseline, workload)
    plan = SweepPlan(run=config, settings=tuple(settings), baseline=baseline, tune=tune, **options.given())
    again = config.nodes == 1  # across nodes, each node's commprof would have to follow rank 0's decisions
    labels = [setting_label(s) for s in settings]
    rounds = refined(MAX_ROUNDS) if tune else None
    launches = (least_launches(plan), launch_budget(plan)) if again else None
    name = f"{kind} {config.run_id}"
    plan_line = progress_words.sweep_plan(
        name, describe(config, workload), labels, plan.repeats, rounds, launches, setting_label(baseline)
    )
    feedback.info(plan_line)
    per_setting = plan.steps_per_setting
    prepare_figures()
    launched = run_job(config, Task(sweep_main, None, plan.to_dict()), per_setting * len(settings), feedback.watch)
    if not launched.has_rank_zero:
        return Outcome(None, note=progress_words.elsewhere(launched.ranks_here))
    if again:
        launched_again(launched.run_dir, plan, f"{kind} {config.run_id}", feedback)
    report = sweep_report(launched.run_dir, launched.run_id, kind, predicted)
    feedback.info(_counted(kind, report))
    return Outcome(
        report, write_report(report, config.reports_dir, report.name, traces=launched.run_dir), traces=launched.run_dir
    )


def _counted(kind: str, report: Report) -> str:
    """The closing line: how many settings were measured, in how many tuning rounds (tune adds some after its first)."""
    assert report.sweep is not None  # a sweep's report
    n = len(report.sweep.settings)
    rounds = report.sweep.rounds
    tuned = f" in {rounds} tuning rounds" if rounds > 1 else ""
    return f"{kind} {report.name}: {n} setting{'s' if n != 1 else ''} measured{tuned}"
