"""`commprof sweep|tune ... -- train.py args`: DDP settings (or a DeepSpeed script's ZeRO options, with --strategy
deepspeed) measured on the user's own script.

A script cannot hold several DDP copies of its model at once, so each setting gets launches of its own:
`repeats` rounds in which every setting takes its turn (A B C A B C), each turn one unprofiled launch of
`warmup_steps + steps_per_repeat` optimizer steps (or `--max-steps`) whose first `warmup_steps` are dropped; then
one profiled launch per setting. The same statistics, plots and report as a sweep of a built-in model follow.

The baseline of a sweep or tune is the script as it is written (config.OWN_LABEL): commprof passes its
DistributedDataParallel no option, so it builds the buckets the script asks for (without a bucket_cap_mb, DDP's
default: a 1 MiB first bucket, then 25 MiB). Every other setting is applied on top of the script's own arguments
(kinds.ddp). What differs by kind of job, each kind says (commprof.kinds). A DeepSpeed script's settings set the
ZeRO options they name in the config it
gives deepspeed.initialize (instrument/deepspeed.py); its baseline sets none."""

from __future__ import annotations

import dataclasses
import secrets
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from commprof.commands.common import prepare_figures, training
from commprof.commands.outcome import Feedback, Outcome
from commprof.commands.reporting import sweep_report, write_report
from commprof.commands.script_kind import OtherKind, check_kind, several_kinds, several_models
from commprof.commands.unfinished import failed_run
from commprof.config import ProfileSchedule, RunConfig, RunRequest
from commprof.errors import RunFailed, UsageError
from commprof.kinds import DDP, kind_of
from commprof.launch.atomic import write_text_atomic
from commprof.launch.job import TORCHRUN_OMP_WARNING, torchrun_environment
from commprof.launch.runlog import read_run_json
from commprof.launch.script_run import finish_script_run
from commprof.plans import SweepOptions, SweepPlan
from commprof.render import progress_words
from commprof.render.kind_words import words_of
from commprof.render.progress_words import counted, span
from commprof.results.common import Estimate, job_steps
from commprof.results.job import BuiltDDP
from commprof.results.run_record import RunRecord
from commprof.results.sweep_record import FILE_NAME, Confirmation, MeasuredSetting, SweepRecord
from commprof.settings import SettingOptions, setting_label

UNPROFILED = ProfileSchedule(wait=0, warmup=0, active=1)  # a placeholder: timed launches run no profiler


def launch_lengths(max_steps: int | None, options: SweepOptions) -> tuple[SweepOptions, int | None]:
    """The options for the plan, and each launch's optimizer steps (None: a timed launch runs warmup_steps +
    steps_per_repeat, a profiled one warmup_steps + 1 + profile_steps). With --max-steps N every launch runs N:
    a timed one times the N - warmup_steps after its warm-up, a profiled one records after it and then goes on."""
    if max_steps is None:
        return options, None
    warmup, profile = options.warmup_steps, options.profile_steps
    if options.steps_per_repeat is not None:
        raise UsageError(
            "--max-steps and --steps-per-repeat: give one (each launch runs --max-steps, the first --warmup-steps "
            "untimed; or --warmup-steps + --steps-per-repeat)"
        )
    if max_steps < warmup + 1 + profile:
        raise UsageError(
            f"--max-steps {max_steps} is too few: each launch drops its first --warmup-steps {warmup}, and the "
            f"profiled one records 1 + --profile-steps {profile} after them; give {warmup + 1 + profile} or more"
        )
    return dataclasses.replace(options, steps_per_repeat=max_steps - warmup), max_steps


def measure_script(
    request: RunRequest,
    settings: list[SettingOptions],
    baseline: SettingOptions,
    kind: str,
    feedback: Feedback,
    options: SweepOptions,
    tune: bool,
    predicted: dict[str, Estimate] | None = None,
) -> Outcome:
    from commprof.analysis.sweep import claimed
    from commprof.analysis.tune import MAX_ROUNDS, measure_rounds
    from commprof.commands.run import check_script
    from commprof.launch.resolve import MachineProbe, resolve
    from commprof.render.verdict_words import refined

    options, max_steps = launch_lengths(request.max_steps, options)
    config = resolve(dataclasses.replace(request, max_steps=None), MachineProbe.detect())
    check_script(request)
    compared = [baseline, *(s for s in settings if type(s) is type(baseline) and s != baseline)]
    plan = SweepPlan(run=config, settings=tuple(compared), baseline=baseline, tune=tune, **options.given())
    timed_steps = max_steps or plan.warmup_steps + plan.steps_per_repeat
    profiled_steps = max_steps or _profiled(plan).total
    forced = kind_of(baseline).forced(compared, baseline)
    try:
        config.run_dir.mkdir(parents=True)
    except FileExistsError:
        raise UsageError(f"run folder {config.run_dir} already exists; commprof never overwrites a run") from None
    started = time.perf_counter()
    what = _tried(compared) if tune else counted([setting_label(s) for s in compared])
    feedback.info(
        progress_words.script_sweep_plan(
            f"{kind} {config.run_id}",
            " ".join(config.script),
            f"{config.world_size} {config.device}",
            what,
            (plan.repeats, plan.repeat_budget),
            (timed_steps, plan.warmup_steps, profiled_steps),
            setting_label(baseline),
            refined(MAX_ROUNDS) if tune else None,
        )
    )
    if torchrun_environment(config.procs_per_node):
        feedback.info(TORCHRUN_OMP_WARNING)
    launches = _Launches(config, plan, forced, feedback, f"{kind} {config.run_id}", timed_steps, profiled_steps, tune)
    try:
        results, measured, tuned = measure_rounds(compared, launches.measure, launches.refine if tune else None)
    except OtherKind:
        shutil.rmtree(config.run_dir, ignore_errors=True)  # made here, holding the one launch that told the kind
        raise
    draft = SweepRecord(
        plan=dataclasses.replace(plan, settings=tuple(measured)),
        settings=results,
        model=None,
        parameters=None,
        world_size=config.world_size,
    )
    claim = claimed(draft)
    confirmation = launches.confirm(next(s for s in measured if setting_label(s) == claim)) if claim else None
    feedback.info(
        f"{kind} {config.run_id}: {counted([setting_label(s) for s in measured])} measured"
        + (f" in {tuned} tuning rounds" if tuned > 1 else "")
        + f", {launches.count} launches"
    )
    last = launches.last
    assert last is not None  # every round launched each setting it measured once more, profiled
    built_by = getattr(kind_of(baseline).built(last), "built_by", "script")  # Trainer's or Lightning's, or the script's
    record = SweepRecord(
        plan=dataclasses.replace(plan, settings=tuple(measured)),
        settings=results,
        model=last.model,
        parameters=last.parameters,
        world_size=config.world_size,
        versions=last.versions,
        rounds=tuned,
        end_time=datetime.now(timezone.utc).isoformat(),
        order=launches.order,
        built_by=built_by,
        script=list(config.script),
        max_steps=max_steps,
        applied_on_top=list(forced),
        timings={"worker_s": time.perf_counter() - started, "launches": launches.count},
        confirmation=confirmation,
    )
    write_text_atomic(config.run_dir / FILE_NAME, record.to_json())
    report = sweep_report(config.run_dir, config.run_id, kind, predicted)
    return Outcome(
        report, write_report(report, config.reports_dir, report.name, traces=config.run_dir), traces=config.run_dir
    )


def _profiled(plan: SweepPlan) -> ProfileSchedule:
    """A profiled launch's schedule: its warm-up steps unrecorded, one to warm the profiler, then those it records."""
    return ProfileSchedule(wait=plan.warmup_steps, warmup=1, active=plan.profile_steps)


@dataclass
class _Launches:
    """A script's sweep, one launch per setting and turn: each round's timed and profiled launches (`measure`), and
    tune's next caps (`refine`), for analysis/tune.measure_rounds."""

    config: RunConfig
    plan: SweepPlan
    forced: tuple[str, ...]  # the DDP arguments every setting but the baseline applies on top of the script's
    feedback: Feedback
    name: str
    timed_steps: int
    profiled_steps: int
    tune: bool
    count: int = 0  # launches so far
    rounds: int = 0
    layout_of: Callable[[Any], tuple[int, ...]] | None = None  # a setting's buckets, from the script's first launch
    last: RunRecord | None = None  # the last profiled launch's record
    smallest: float = 0.0  # the smallest bucket size the job accepts (torch.compile's DDPOptimizer: 1 MiB)
    order: list[str] = field(default_factory=list)  # the timed launches' settings, in the order they ran
    timed: dict[str, dict[str, list[float]]] = field(default_factory=dict)  # label -> round -> timed steps
    profiled: dict[str, MeasuredSetting] = field(default_factory=dict)  # by label, from its profiled launch
    carried: list[SettingOptions] = field(default_factory=list)  # measured again in the next round: tune's best

    def launch(
        self, setting: SettingOptions, run_id: str, steps: int, schedule: ProfileSchedule | None, subject: str
    ) -> RunRecord:
        self.count += 1
        applied = tuple(
            dict.fromkeys((*self.config.ddp_forced, *(() if setting == self.plan.baseline else self.forced)))
        )
        return _launch(self.config, setting, applied, run_id, steps, schedule, self.feedback, subject)

    def measure(self, settings: list[SettingOptions]) -> dict[str, MeasuredSetting]:
        """Interleaved repeats of one timed launch per setting (A B C, C B A, ...), the baseline in each (its
        launches pair with the others' of the same repeat: launch_stats), --repeats of them, then more while a
        setting's comparison with the baseline is undecided, up to the budget; then one profiled launch each. Tune
        measures one setting per bucket layout, which it learns from the first launch (the baseline's)."""
        from commprof.analysis.launch_stats import undecided

        plan, pending = self.plan, list(settings)
        baseline, own = plan.baseline, setting_label(plan.baseline)
        self.rounds += 1
        # the baseline in every round, and in a tuning round the best size so far, so that the new sizes pair with
        # both in the launches of their own round
        carried = [s for s in self.carried if s not in pending]
        active = [baseline, *carried, *(s for s in pending if s != baseline)]
        repeat = 0
        while True:
            repeat += 1
            # the order reversed every other repeat (A B C, C B A): a launch's place in its round, right after
            # another or first, does not favour one setting
            for setting in list(active if repeat % 2 else active[::-1]):
                if setting not in active:  # measured once for its buckets: another builds the same
                    continue
                label, key = setting_label(setting), f"{self.rounds}.{repeat}"
                subject = f"{label}, repeat {repeat} ({span(self.plan.repeats, self.plan.repeat_budget)})"
                run = self.launch(setting, f"{label}-r{key}", self.timed_steps, None, subject)
                if self.count == 1:
                    check_kind(run, plan.baseline)
                    several = len(run.job.of(BuiltDDP)) > 1 or getattr(plan.baseline, "ddp_model", None) is not None
                    if several and kind_of(plan.baseline) is DDP:
                        self.feedback.info(f"{self.name}: {several_models(run, plan.baseline)}")
                    if len(run.job.kinds) > 1:
                        self.feedback.info(f"{self.name}: {several_kinds(run, plan.baseline)}")
                    # Dynamo's DDPOptimizer splits the compiled graph at the buckets and asserts that none is
                    # smaller than DDP's 1 MiB first bucket (torch/_dynamo/backends/distributed.py)
                    self.smallest = 1.0 if run.compiled and run.compiled.graphs else 0.0
                self.timed.setdefault(label, {})[key] = _timed_steps(run, plan.warmup_steps)
                self.order.append(label)
                kind = kind_of(plan.baseline)
                if self.tune and self.layout_of is None and kind.built(run):  # the baseline's
                    self.layout_of = kind.layouts(run)
                    described = words_of(kind).layout(run)
                    pending = _one_per_layout(pending, self.layout_of, described, self.name, self.feedback)
                    active = [s for s in active if s in pending or s == baseline]
            if repeat < plan.repeats:
                continue
            open_ = undecided(self._values([setting_label(s) for s in active]), own)
            active = [s for s in active if s == baseline or setting_label(s) in open_]
            if len(active) == 1 or repeat >= plan.repeat_budget:
                break
            self.feedback.info(progress_words.after_repeats(self.name, repeat, own, open_, plan.repeat_budget))
        measured = {}
        for setting in pending:
            label = setting_label(setting)
            self.last = self.launch(setting, label, self.profiled_steps, _profiled(plan), f"{label}, profiled")
            built = kind_of(setting).built(self.last)
            measured[label] = MeasuredSetting(
                options=kind_of(setting).ran_with(setting, self.last),
                step_ms=[],
                ddp={str(r.rank): r.ddp for r in self.last.ranks},
                asked=getattr(built, "asked", {}),
                applied=built.applied if built else {},
            )
        self.profiled.update(measured)
        labels = [*measured, own, *map(setting_label, carried)]
        return {label: self._with_launches(label) for label in labels if label in self.profiled}

    def _values(self, labels: list[str]) -> dict[str, dict[str, float]]:
        from commprof.analysis.launch_stats import launch_values

        return {label: launch_values(list(self.timed[label].values()), list(self.timed[label])) for label in labels}

    def _with_launches(self, label: str) -> MeasuredSetting:
        """A setting with every timed launch it has had so far (the baseline's grow with each tuning round)."""
        timed = self.timed.get(label, {})
        return dataclasses.replace(
            self.profiled[label],
            step_ms=[ms for steps in timed.values() for ms in steps],
            launches=list(timed.values()),
            rounds=list(timed),
        )

    def confirm(self, setting: SettingOptions) -> Confirmation:
        """The claimed setting against the baseline again, in fresh interleaved pairs of launches (the order
        alternating from pair to pair), --repeats of them, then more while the answer is undecided, up to the
        budget: a setting is recommended only where it holds there too."""
        from commprof.analysis.launch_stats import decided, launch_values, paired_speedup

        plan, label, own = self.plan, setting_label(setting), setting_label(self.plan.baseline)
        pairs_of = f"{span(self.plan.repeats, self.plan.repeat_budget)} fresh interleaved pairs of launches"
        self.feedback.info(progress_words.confirming(self.name, label, own, pairs_of))
        pairs: dict[str, list[list[float]]] = {own: [], label: []}
        for pair in range(1, plan.repeat_budget + 1):
            order = [plan.baseline, setting] if pair % 2 else [setting, plan.baseline]
            for one in order:
                name = setting_label(one)
                run = self.launch(one, f"{name}-c{pair}", self.timed_steps, None, f"{name}, check {pair}")
                pairs[name].append(_timed_steps(run, plan.warmup_steps))
            keys = [str(i) for i in range(pair)]
            speedup = paired_speedup(launch_values(pairs[own], keys), launch_values(pairs[label], keys))
            if pair >= plan.repeats and decided(speedup):
                break
        return Confirmation(setting=label, baseline=pairs[own], candidate=pairs[label])

    def refine(self, results: dict[str, MeasuredSetting], done: int) -> list[SettingOptions]:
        """Tune's sizes for the next round (DDP's bucket_cap_mb, or ZeRO's reduce_bucket_size), around the best
        measured so far, where it beats the script's own setting; none when it is done."""
        from commprof.analysis.launch_stats import beats, paired_speedup
        from commprof.analysis.sweep import by_launch
        from commprof.analysis.tune import next_bucket_sizes

        baseline, layout_of = self.plan.baseline, self.layout_of
        kind = kind_of(baseline)
        knob = kind.size_knob or ""
        own = setting_label(baseline)
        labels = {m.options[knob]: label for label, m in results.items() if label != own and m.options.get(knob)}
        values = {label: by_launch(results[label]) for label in [own, *labels.values()]}
        # each size as its step over its rounds' baseline: the best has the largest speedup (the host moves)
        speedups = {size: paired_speedup(values[own], values[label]) for size, label in labels.items()}
        best = max(speedups, key=lambda size: speedups[size].value) if speedups else None
        fresh = next_bucket_sizes(
            {size: [1 / speedup.value] for size, speedup in speedups.items()},
            done,
            (lambda size: layout_of(kind.sized(baseline, size))) if layout_of else None,
            own_layout=layout_of(baseline) if layout_of else None,
            settled=best is None or not beats(speedups[best]),
        )
        pending = [kind.sized(baseline, size) for size in fresh if kind is not DDP or size >= self.smallest]
        self.carried = [kind.sized(baseline, best)] if pending and best is not None else []
        if pending:
            more = [setting_label(s) for s in pending]
            self.feedback.info(progress_words.tuning_round(self.name, done + 2, more))
        return pending


def _tried(settings: Sequence[SettingOptions]) -> str:
    """What tune's first round measures: the script's own setting and the sizes of the coarse grid."""
    return words_of(kind_of(settings[0])).tried(settings[1:])


def _one_per_layout(
    pending: list[SettingOptions],
    layout_of: Callable[[Any], tuple[int, ...]],
    described: Callable[[tuple[int, ...]], str],
    name: str,
    feedback: Feedback,
) -> list[SettingOptions]:
    """Tune measures one setting per bucket layout, the first that builds it (the baseline comes first); says
    which it leaves out and how many it measures."""
    from commprof.kinds.ddp_buckets import one_per_layout

    kept = one_per_layout(pending, layout_of)
    twins = [
        (setting_label(s), setting_label(kept[layout_of(s)]), described(layout_of(s)))
        for s in pending
        if s not in kept.values()
    ]
    feedback.info(progress_words.one_per_layout(name, [setting_label(s) for s in kept.values()], twins))
    return list(kept.values())


def _launch(
    config: RunConfig,
    setting: SettingOptions,
    forced: tuple[str, ...],
    run_id: str,
    max_steps: int,
    schedule: ProfileSchedule | None,
    feedback: Feedback,
    subject: str,
) -> RunRecord:
    """One launch of the script with this setting, in a folder of the sweep's; its completed run.json."""
    from commprof.launch.job import run_job

    one = dataclasses.replace(
        kind_of(setting).configured(config, setting),
        run_id=run_id,
        traces_dir=config.run_dir,
        max_steps=max_steps,
        schedule=schedule or UNPROFILED,
        profiled=schedule is not None,
        ddp_forced=forced,
        launch_id=secrets.token_hex(8),
    )
    prepare_figures()
    try:
        run_job(one, training(one), max_steps, lambda path, total: feedback.watch(path, total, subject))
    except RunFailed as failure:
        raise failed_run(failure, one) from None
    finish_script_run(one.run_dir, one.launch_id)
    run = read_run_json(one.run_dir)
    if run is None or (run.steps_completed or 0) < max_steps:
        raise UsageError(
            f"{' '.join(config.script)} ended after {(run.steps_completed or 0) if run else 0} "
            f"optimizer steps; a sweep needs {max_steps} per launch: let it run longer (its own "
            "arguments), or ask for fewer --max-steps, --warmup-steps, --steps-per-repeat, --profile-steps"
        )
    return run


def _timed_steps(run: RunRecord, warmup_steps: int) -> list[float]:
    """The job's steps after the warm-up, but those torch.compile compiled in (a recompile for the setting)."""
    compiled = set(run.compiled.steps) if run.compiled else set()
    steps = job_steps([r.step_ms for r in run.ranks])
    return [ms for step, ms in enumerate(steps, 1) if step > warmup_steps and step not in compiled]
