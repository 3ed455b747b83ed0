"""`commprof sweep|tune ... -- train.py args`: DDP settings measured on the user's own script.

A script cannot hold several DDP copies of its model at once, so each setting gets launches of its own:
`repeats` rounds in which every setting takes its turn (A B C A B C), each turn one unprofiled launch of
`warmup_steps + steps_per_repeat` optimizer steps whose first `warmup_steps` are dropped; then one profiled
launch per setting. The same statistics, plots and report as a sweep of a built-in model follow."""

from __future__ import annotations

import dataclasses
import secrets
import time
from datetime import datetime, timezone
from typing import Any

from commprof.commands.common import ddp_only, training
from commprof.commands.outcome import Feedback, Outcome
from commprof.commands.reporting import sweep_report, write_report
from commprof.config import (
    DDPOptions,
    ProfileSchedule,
    RunConfig,
    RunRequest,
    SettingOptions,
    SweepPlan,
    setting_label,
)
from commprof.errors import UsageError
from commprof.launch.runlog import finish_script_run, read_run_json, write_json_atomic
from commprof.results.common import Estimate
from commprof.results.run_record import RunRecord

UNPROFILED = ProfileSchedule(wait=0, warmup=0, active=1)  # a placeholder: timed launches run no profiler
# every setting is applied as it is, DDP's default values too: the script's own choice is not a setting
SWEPT = ("bucket_cap_mb", "gradient_as_bucket_view", "static_graph")


def measure_script(
    request: RunRequest,
    settings: list[SettingOptions],
    baseline: SettingOptions,
    kind: str,
    feedback: Feedback,
    rounds: dict[str, Any],
    tune: bool,
    predicted: dict[str, Estimate] | None = None,
) -> Outcome:
    from commprof.analysis.tune import next_bucket_sizes
    from commprof.commands.run import check_script
    from commprof.launch.resolve import MachineProbe, resolve

    ddp_only(request, "sweep -- SCRIPT", " settings on a script (one that calls fully_shard itself keeps its own)")
    assert isinstance(baseline, DDPOptions)  # --strategy ddp: the baseline and every setting are DDP's
    config = resolve(request, MachineProbe.detect())
    check_script(request)
    plan = SweepPlan(run=config, settings=tuple(settings), baseline=baseline, tune=tune, **rounds)
    try:
        config.run_dir.mkdir(parents=True)
    except FileExistsError:
        raise UsageError(f"run folder {config.run_dir} already exists; commprof never overwrites a run") from None
    started = time.perf_counter()
    feedback.info(
        f"{kind} {config.run_id}: {' '.join(config.script)} on {config.world_size} {config.device} rank(s); "
        f"{len(settings)} settings x {plan.repeats} interleaved rounds, one launch each"
    )
    results: dict[str, dict[str, Any]] = {}
    order: list[str] = []
    pending: list[DDPOptions] = [s for s in settings if isinstance(s, DDPOptions)]
    round_index = 0
    last: RunRecord | None = None
    while pending:
        timed: dict[str, list[float]] = {setting_label(s): [] for s in pending}
        for repeat in range(plan.repeats):
            for setting in pending:
                label = setting_label(setting)
                run = _launch(
                    config,
                    setting,
                    f"{label}-r{round_index + 1}.{repeat + 1}",
                    plan.warmup_steps + plan.steps_per_repeat,
                    None,
                    feedback,
                )
                timed[label] += _job_steps(run)[plan.warmup_steps :]
                order.append(label)
        for setting in pending:
            label = setting_label(setting)
            schedule = ProfileSchedule(wait=plan.warmup_steps, warmup=1, active=plan.profile_steps)
            last = _launch(config, setting, label, schedule.total, schedule, feedback)
            results[label] = {
                "options": dataclasses.asdict(setting),
                "step_ms": timed[label],
                "ddp": {str(r.rank): r.ddp for r in last.ranks},
            }
        round_index += 1
        pending = []
        if tune:
            by_size = {r["options"]["bucket_cap_mb"]: r["step_ms"] for r in results.values()}
            pending = [
                dataclasses.replace(baseline, bucket_cap_mb=mb) for mb in next_bucket_sizes(by_size, round_index - 1)
            ]
    assert last is not None  # every round launched each pending setting once more, profiled
    built = last.ddp_built[0] if last.ddp_built else None
    write_json_atomic(
        config.run_dir / "sweep.json",
        {
            "plan": plan.to_dict(),
            "versions": last.versions,
            "model": last.model,
            "parameters": last.parameters,
            "world_size": config.world_size,
            "rounds": round_index,
            "end_time": datetime.now(timezone.utc).isoformat(),
            "order": order,
            "settings": results,
            "framework": built.built_by if built else "script",
            "script": list(config.script),
            "timings": {"worker_s": time.perf_counter() - started, "launches": len(order) + len(results)},
        },
    )
    report = sweep_report(config.run_dir, config.run_id, kind, predicted)
    return Outcome(
        report, write_report(report, config.reports_dir, report.name, traces=config.run_dir), traces=config.run_dir
    )


def _launch(
    config: RunConfig,
    setting: DDPOptions,
    run_id: str,
    max_steps: int,
    schedule: ProfileSchedule | None,
    feedback: Feedback,
) -> RunRecord:
    """One launch of the script with this setting, in a folder of the sweep's; its completed run.json."""
    from commprof.launch.job import run_job

    one = dataclasses.replace(
        config,
        run_id=run_id,
        traces_dir=config.run_dir,
        ddp=setting,
        max_steps=max_steps,
        schedule=schedule or UNPROFILED,
        profiled=schedule is not None,
        ddp_forced=SWEPT,
        launch_id=secrets.token_hex(8),
    )
    run_job(one, training(one), max_steps, feedback.watch)
    finish_script_run(one.run_dir, one.launch_id)
    run = read_run_json(one.run_dir)
    if run is None or (run.steps_completed or 0) < max_steps:
        raise UsageError(
            f"{' '.join(config.script)} ended after {(run.steps_completed or 0) if run else 0} "
            f"optimizer steps; a sweep needs {max_steps} per launch: let it run longer (its own "
            "arguments), or ask for fewer --warmup-steps, --steps-per-repeat, --profile-steps"
        )
    return run


def _job_steps(run: RunRecord) -> list[float]:
    """Per step, the slowest rank's time (DDP synchronises every step)."""
    return [max(per_rank) for per_rank in zip(*(r.step_ms for r in run.ranks), strict=False)]
