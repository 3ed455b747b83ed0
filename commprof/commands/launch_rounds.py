"""A built-in model's sweep, tune and advise over several launches (issue 60): the launch is the unit that
replicates, so the settings one launch measured (its interleaved repeats, and tune's refinement) are launched again,
every one in each launch, BUILT_IN_LAUNCHES launches at least (fewer where --max-repeats is less) and more while a
setting against the baseline is undecided, up to --max-repeats; each launch is a round in which the settings'
values pair (analysis/launch_stats.py). A setting that beats the baseline is then measured against it again in
fresh launches of the two alone before it is recommended. Their traces are the first launch's; the others' lie in
its folder's launches/."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from commprof.commands.outcome import Feedback
from commprof.plans import SweepPlan
from commprof.render import progress_words
from commprof.results.sweep_record import FILE_NAME, Confirmation, SweepRecord
from commprof.settings import SettingOptions, setting_label

BUILT_IN_LAUNCHES = 3


def launch_budget(plan: SweepPlan) -> int:
    """The most launches a built-in model's sweep makes of a setting (and of a confirmation): --max-repeats, or
    twice BUILT_IN_LAUNCHES."""
    return plan.max_repeats or 2 * BUILT_IN_LAUNCHES


def least_launches(plan: SweepPlan) -> int:
    """The launches every setting gets before its comparison with the baseline may stop it."""
    return min(BUILT_IN_LAUNCHES, launch_budget(plan))


def launched_again(run_dir: Path, plan: SweepPlan, name: str, feedback: Feedback) -> None:
    """After the first launch (its sweep.json in `run_dir`): more launches of the settings it measured, merged into
    that record, each launch a round; then the claim, if any, confirmed in fresh launches."""
    from commprof.analysis.launch_stats import launch_values, undecided
    from commprof.analysis.sweep import claimed

    record = SweepRecord.read(run_dir)
    settings = {setting_label(s): s for s in record.plan.settings}
    own = setting_label(plan.baseline)
    steps = {label: {"1": m.step_ms} for label, m in record.settings.items()}
    active, budget = list(settings), launch_budget(plan)
    for launch in range(2, budget + 1):
        if launch > least_launches(plan):
            values = {label: launch_values(list(steps[label].values()), list(steps[label])) for label in active}
            still = undecided(values, own)
            if not still:
                break
            active = [own, *still]
            feedback.info(progress_words.still_undecided(name, own, still, "launch", launch, budget))
        measured = _launch(run_dir, plan, [settings[label] for label in active], f"launch-{launch}", feedback)
        for label, steps_ms in measured.items():
            steps[label][str(launch)] = steps_ms
    merged = _merged(record, steps)
    claim = claimed(merged)
    confirmation = _confirm(run_dir, plan, settings[claim], name, feedback) if claim else None
    merged = dataclasses.replace(merged, confirmation=confirmation)
    (run_dir / FILE_NAME).write_text(merged.to_json())


def _merged(record: SweepRecord, steps: dict[str, dict[str, list[float]]]) -> SweepRecord:
    """The first launch's record with every launch's timed steps of each setting, by round."""
    settings = {
        label: dataclasses.replace(
            m,
            step_ms=[ms for launch in steps[label].values() for ms in launch],
            launches=list(steps[label].values()),
            rounds=list(steps[label]),
        )
        for label, m in record.settings.items()
    }
    return dataclasses.replace(record, settings=settings)


def _confirm(run_dir: Path, plan: SweepPlan, setting: SettingOptions, name: str, feedback: Feedback) -> Confirmation:
    """The claimed setting and the baseline alone, in fresh launches (each a pair, the two interleaved in it),
    BUILT_IN_LAUNCHES at least, more while undecided, up to the budget."""
    from commprof.analysis.launch_stats import decided, launch_values, paired_speedup

    label, own = setting_label(setting), setting_label(plan.baseline)
    fresh = f"{progress_words.span(least_launches(plan), launch_budget(plan))} fresh launches"
    feedback.info(progress_words.confirming(name, label, own, fresh))
    pairs: dict[str, list[list[float]]] = {own: [], label: []}
    for launch in range(1, launch_budget(plan) + 1):
        measured = _launch(run_dir, plan, [plan.baseline, setting], f"check-{launch}", feedback)
        pairs[own].append(measured[own])
        pairs[label].append(measured[label])
        keys = [str(i) for i in range(launch)]
        speedup = paired_speedup(launch_values(pairs[own], keys), launch_values(pairs[label], keys))
        if launch >= least_launches(plan) and decided(speedup):
            break
    return Confirmation(setting=label, baseline=pairs[own], candidate=pairs[label])


def _launch(
    run_dir: Path, plan: SweepPlan, settings: list[SettingOptions], run_id: str, feedback: Feedback
) -> dict[str, list[float]]:
    """One launch of the sweep worker over these settings (no tuning), in run_dir/launches/RUN_ID: each setting's
    timed job steps."""
    from commprof.launch.job import Task, run_job
    from commprof.worker.sweep import sweep_main

    config = dataclasses.replace(plan.run, run_id=run_id, traces_dir=run_dir / "launches")
    again = dataclasses.replace(plan, run=config, settings=tuple(settings), tune=False)
    launched = run_job(
        config, Task(sweep_main, None, again.to_dict()), again.steps_per_setting * len(settings), feedback.watch
    )
    record = SweepRecord.read(launched.run_dir)
    return {label: m.step_ms for label, m in record.settings.items()}
