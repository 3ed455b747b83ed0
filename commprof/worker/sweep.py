"""Per-rank entry point of `commprof sweep` / `tune`: many DDP (or FSDP) settings in one launch.

Every setting gets a fresh copy of the same initial model wrapped in its own DDP (or sharded with its
own FSDP options), a warmup (DDP rebuilds its buckets after the first step), then the settings take
turns for `repeats` rounds (A B C A B C ...) so that machine drift does not favour one of them. Each
setting is profiled in a separate block afterwards, so profiling never slows the timed steps.

When the settings' models, DDP buckets and optimizer states do not all fit in memory at once (a
large model on a GPU), each turn builds its setting afresh from the same initial model, warms it
up again, and frees it (garbage collection and the CUDA cache) before the next one.
"""

from __future__ import annotations

import copy
import dataclasses
import gc
import socket
import time
import weakref
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from commprof.analysis.tune import measure_rounds, next_bucket_sizes
from commprof.config import ProfileSchedule
from commprof.instrument.profiler import cuda_synchronize, make_profiler
from commprof.kinds.ddp_buckets import layout
from commprof.launch.atomic import write_text_atomic
from commprof.launch.progress import Progress, write_progress
from commprof.plans import SweepPlan
from commprof.results.common import job_steps
from commprof.results.sweep_record import FILE_NAME, MeasuredSetting, SweepRecord
from commprof.settings import SettingOptions, setting_label
from commprof.worker.rank import RankContext, claim_run_dir, distributed, exit_on_error, versions
from commprof.worker.training import Trainer, make_batches
from commprof.workloads import load_workload


@exit_on_error
def sweep_main(plan_dict: dict[str, Any], progress_path: str) -> dict[str, Any]:
    plan = SweepPlan.from_dict(plan_dict)
    config = plan.run
    with distributed(config) as ctx:
        started = time.perf_counter()
        run_dir = claim_run_dir(config, ctx.rank)
        torch.manual_seed(config.seed)  # one initial model, copied for every setting
        workload = load_workload(config.model, config.model_size)
        batches = make_batches(workload, config.batch_size, config.seed, ctx.rank, ctx.device)
        trainers = _Trainers(workload, batches, ctx, config.precision)
        progress = _ProgressWriter(Path(progress_path), ctx, plan)
        phases = {"measured_s": 0.0, "overhead_s": 0.0}
        order: list[str] = []  # the timed blocks in the order they ran
        setup_s = time.perf_counter() - started
        results, measured, rounds = measure_rounds(
            list(plan.settings),
            lambda pending: _measure_round(plan, ctx, trainers, pending, run_dir, progress, phases, order),
            (lambda results, done: _next_round(plan, ctx, results, done, workload.parameter_sizes))
            if plan.tune
            else None,
        )
        hosts: list[str] = [""] * ctx.world_size
        dist.all_gather_object(hosts, socket.gethostname())
        if ctx.rank == 0:
            phases.update(setup_s=setup_s, worker_s=time.perf_counter() - started)
            record = SweepRecord(
                plan=dataclasses.replace(plan, settings=tuple(measured)),
                settings=results,
                model=workload.name,
                parameters=workload.parameter_count,
                world_size=ctx.world_size,
                versions=versions(),
                hosts=hosts,
                rounds=rounds,
                end_time=datetime.now(timezone.utc).isoformat(),
                order=order,
                timings=phases,
            )
            write_text_atomic(run_dir / FILE_NAME, record.to_json())
        dist.barrier()
        return {"rank": ctx.rank, "run_id": config.run_id, "run_dir": str(run_dir)}


class _ProgressWriter:
    def __init__(self, path: Path, ctx: RankContext, plan: SweepPlan):
        self.path, self.enabled, self.rank = path, ctx.local_rank == 0, ctx.rank
        self.warmup_steps = plan.warmup_steps
        self.per_setting = plan.steps_per_setting
        self.total = self.per_setting * len(plan.settings)
        self.done = 0

    def add_settings(self, count: int, rebuilt_turns: int) -> None:
        """`rebuilt_turns`: turns in which a setting is built and warmed up again."""
        per_setting = self.per_setting + rebuilt_turns * self.warmup_steps
        self.total = max(self.total, self.done + count * per_setting)

    def step(self, ms: float, phase: str) -> None:
        self.done += 1
        if self.enabled:
            write_progress(self.path, Progress(self.done, self.total, ms, phase, self.rank, socket.gethostname()))


class _Trainers:
    """Each setting's trainer: a fresh copy of the same initial model in its own DDP or FSDP, with its optimizer. Counts
    how many are alive at once (what a GPU must hold: models, DDP buckets, optimizer states)."""

    def __init__(self, workload, batches, ctx: RankContext, precision: str):
        self.workload, self.batches, self.ctx, self.precision = workload, batches, ctx, precision
        self._alive: weakref.WeakSet[Trainer] = weakref.WeakSet()
        self.most_alive = 0

    def build(self, setting: SettingOptions) -> Trainer:
        self.free()
        trainer = Trainer(
            copy.deepcopy(self.workload.model), self.workload, self.batches, setting, self.ctx.device, self.precision
        )
        self._alive.add(trainer)
        self.most_alive = max(self.most_alive, len(self._alive))
        return trainer

    def free(self) -> None:
        """Collect the trainers nothing refers to any more, and give their GPU memory back."""
        gc.collect()
        if self.ctx.device.type == "cuda":
            torch.cuda.empty_cache()


def _how_many_fit(plan: SweepPlan, ctx: RankContext, trainers: _Trainers, settings: list[SettingOptions], warm) -> int:
    """How many settings' trainers fit in memory at once: --max-live-settings, or on a GPU what the first one
    took (resident, and a step's peak) against the free memory, a tenth kept spare; on CPU all of them.
    Every rank takes the smallest answer."""
    fit = plan.max_live_settings or len(settings)
    if plan.max_live_settings is None and ctx.device.type == "cuda":
        cuda_synchronize(True)
        torch.cuda.reset_peak_memory_stats(ctx.device)
        before = torch.cuda.memory_allocated(ctx.device)
        trainer = trainers.build(settings[0])
        warm(trainer, setting_label(settings[0]))
        resident = max(1, torch.cuda.memory_allocated(ctx.device) - before)
        transient = torch.cuda.max_memory_allocated(ctx.device) - before - resident
        free, total = torch.cuda.mem_get_info(ctx.device)
        fit = 1 + max(0, int((free - total // 10 - transient) // resident))
        del trainer
        trainers.free()
    answers: list[Any] = [None] * ctx.world_size
    dist.all_gather_object(answers, fit)
    return min(answers)


def _measure_round(
    plan: SweepPlan,
    ctx: RankContext,
    trainers: _Trainers,
    settings: list[SettingOptions],
    run_dir: Path,
    progress: _ProgressWriter,
    phases: dict[str, float],
    order: list[str],
) -> dict[str, MeasuredSetting]:
    """Warm up, then the settings take turns for `repeats` rounds, then each is profiled. When they do not all
    fit in memory at once, each turn builds its setting afresh (and warms it up again) and frees it after."""

    def warm(trainer: Trainer, label: str) -> Trainer:
        started = time.perf_counter()
        for _ in range(plan.warmup_steps):
            progress.step(trainer.step(), f"warmup {label}")
        phases["overhead_s"] += time.perf_counter() - started
        return trainer

    all_live = _how_many_fit(plan, ctx, trainers, settings, warm) >= len(settings)
    progress.add_settings(len(settings), rebuilt_turns=0 if all_live else plan.repeats)
    live = {setting_label(s): warm(trainers.build(s), setting_label(s)) for s in settings} if all_live else {}

    def trainer_for(setting: SettingOptions) -> Trainer:
        label = setting_label(setting)
        return live[label] if all_live else warm(trainers.build(setting), label)

    step_ms: dict[str, list[float]] = {setting_label(s): [] for s in settings}
    for repeat in range(plan.repeats):
        for setting in settings:
            label, trainer = setting_label(setting), trainer_for(setting)
            order.append(label)
            for _ in range(plan.steps_per_repeat):
                step_ms[label].append(trainer.step())
                phases["measured_s"] += step_ms[label][-1] / 1000
                progress.step(step_ms[label][-1], f"repeat {repeat + 1}/{plan.repeats} {label}")
            del trainer
    ddp: dict[str, dict[str, Any]] = {}
    overhead_start = time.perf_counter()
    for setting in settings:
        label, trainer = setting_label(setting), trainer_for(setting)
        folder = run_dir / label
        folder.mkdir(parents=True, exist_ok=True)
        with make_profiler(
            ProfileSchedule(0, 1, plan.profile_steps), ctx.device.type == "cuda", folder, ctx.rank
        ) as prof:
            for _ in range(plan.profile_steps + 1):
                progress.step(trainer.step(), f"profiling {label}")
                prof.step()
        ddp[label] = trainer.ddp_logging_data()
        del trainer
    live.clear()
    trainers.free()
    phases["overhead_s"] += time.perf_counter() - overhead_start
    phases["most_live_settings"] = max(phases.get("most_live_settings", 0), trainers.most_alive)
    local = {label: {"step_ms": step_ms[label], "ddp": ddp[label]} for label in step_ms}
    gathered: list[Any] = [None] * ctx.world_size
    dist.all_gather_object(gathered, local)
    return {
        setting_label(s): MeasuredSetting(
            options=dataclasses.asdict(s),
            step_ms=job_steps([g[setting_label(s)]["step_ms"] for g in gathered]),
            ddp={str(rank): g[setting_label(s)]["ddp"] for rank, g in enumerate(gathered)},
        )
        for s in settings
    }


def _next_round(
    plan: SweepPlan, ctx: RankContext, results: dict[str, MeasuredSetting], round_index: int, parameter_sizes: list[int]
) -> list[SettingOptions]:
    """Rank 0 decides the next bucket sizes from everyone's measurements; all ranks follow."""
    decision: list[Any] = [None]
    if ctx.rank == 0:
        by_size = {r.options["bucket_cap_mb"]: r.step_ms for r in results.values()}
        decision[0] = next_bucket_sizes(
            by_size, round_index, lambda mb: layout(parameter_sizes, mb), turn=plan.steps_per_repeat
        )
    dist.broadcast_object_list(decision, src=0)
    return [dataclasses.replace(plan.baseline, bucket_cap_mb=mb) for mb in decision[0]]
