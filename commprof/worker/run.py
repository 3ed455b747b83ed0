"""Per-rank entry point of `commprof run`, started by torch elastic: train with DDP under the profiler."""

from __future__ import annotations

import dataclasses
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from commprof.backends import by_name
from commprof.config import RunConfig
from commprof.instrument.cast_probe import probe_casts, typical_bucket_bytes
from commprof.instrument.hang_watch import HangWatch
from commprof.instrument.link_probe import probe_link, probe_tiers
from commprof.instrument.profiler import make_profiler, trace_path
from commprof.launch.atomic import now
from commprof.launch.progress import Every, Progress, write_progress
from commprof.launch.runlog import write_run_json
from commprof.launch.step_log import StepLog, steps_kept
from commprof.results.run_record import CastCost, ClockOffset, ProbedSize, ProbedTier, RankRecord, RunRecord
from commprof.worker.clocks import measure_clock_offsets
from commprof.worker.rank import (
    RankContext,
    claim_run_dir,
    device_name,
    distributed,
    exit_on_error,
    gather_digests,
    mpi_through_mpi4py,
    peak_memory_mb,
    tf32_settings,
    versions,
)
from commprof.worker.step_ledger import StepLedger
from commprof.worker.training import Trainer, make_batches
from commprof.workloads import Workload, load_workload


@exit_on_error
def worker_main(config_dict: dict[str, Any], progress_path: str) -> dict[str, Any]:
    return run_worker(RunConfig.from_dict(config_dict), progress_path)


def run_worker(config: RunConfig, progress_path: str, store: Any = None) -> dict[str, Any]:
    with distributed(config, store) as ctx:
        run_dir = claim_run_dir(config, ctx.rank)
        # point-to-point on CPU tensors: a GPU-only backend's runs (NCCL's) measure over a Gloo group
        clock_group = dist.new_group(backend="gloo") if "cpu" not in by_name(config.backend).devices else None
        clocks = measure_clock_offsets(ctx.rank, socket.gethostname(), clock_group)
        torch.manual_seed(config.seed)  # identical initial weights on every rank
        workload = load_workload(config.model, config.model_size)
        if ctx.rank == 0:
            started = _start_record(config, ctx, workload, clocks)
            write_run_json(run_dir, started)
        result = _train(config, ctx, workload, run_dir, Path(progress_path))
        results: list[Any] = [None] * ctx.world_size
        dist.all_gather_object(results, result)
        gather_digests(run_dir, ctx.rank, ctx.world_size)
        if ctx.rank == 0:
            write_run_json(run_dir, _final_record(started, results))
        dist.barrier()  # every trace and run.json exists before any node starts analysing
        return {"rank": ctx.rank, "run_id": config.run_id, "run_dir": str(run_dir)}


def _train(config: RunConfig, ctx: RankContext, workload: Workload, run_dir: Path, progress_path: Path) -> RankResult:
    batches = make_batches(workload, config.batch_size, config.seed, ctx.rank, ctx.device)
    use_cuda, window = ctx.device.type == "cuda", config.schedule.profiled_steps
    ledger = StepLedger(run_dir, ctx.rank, socket.gethostname(), use_cuda, window) if config.whole_run else None
    trainer = Trainer(
        workload.model,
        workload,
        batches,
        config.options,
        ctx.device,
        config.precision,
        mpi_gradients=mpi_through_mpi4py(config),
        timing=ledger,
    )
    recorder = StepRecorder(run_dir, ctx, progress_path, config)
    if ledger:
        ledger.clock.install()
    with make_profiler(config.schedule, ctx.device.type == "cuda", run_dir, ctx.rank) as prof:
        for _ in range(config.steps):
            if ledger:
                ledger.step_started()
            step_ms = trainer.step()
            if ledger:
                ledger.step_ended(step_ms)
            recorder.record(step_ms)
            prof.step()
    if ledger:
        ledger.clock.uninstall()
        ledger.finish()
    recorder.writing_traces()
    probed = not mpi_through_mpi4py(config)
    probe = probe_link(ctx.device) if probed else []
    tiers = probe_tiers(ctx.device) if probed else []
    bucket = typical_bucket_bytes(config.ddp.bucket_cap_mb, workload.parameter_bytes)
    casts = probe_casts(ctx.device, bucket) if probed else []
    record = RankRecord(
        rank=ctx.rank,
        host=recorder.log.host,
        device=device_name(ctx.device),
        trace=trace_path(run_dir, ctx.rank).name,
        trace_path=str(trace_path(run_dir, ctx.rank).resolve()),  # on "host": nodes may share no file system
        step_ms=recorder.log.step_ms,
        ddp=trainer.ddp_logging_data(),
        peak_memory_mb=peak_memory_mb(ctx.device),
    )
    return RankResult(record, recorder.log.steps_done, probe, tiers, casts)


@dataclass(frozen=True)
class RankResult:
    """What one rank sends rank 0 at the end: its record in run.json, its steps, its times of the link probe (and of
    its tiers, rank 0's), and what compressing a gradient cost on its device (instrument/cast_probe)."""

    record: RankRecord
    steps_done: int
    link_probe: list[ProbedSize]
    link_tiers: list[ProbedTier] = dataclasses.field(default_factory=list)
    cast_costs: list[CastCost] = dataclasses.field(default_factory=list)


class StepRecorder:
    """What commprof does after every training step besides profiling: the rank's step log (so the
    completed steps are known even if the run dies) and, on each node's first rank, the progress."""

    def __init__(self, run_dir: Path, ctx: RankContext, progress_path: Path, config: RunConfig):
        self.ctx, self.progress_path, self.total, self.schedule = ctx, progress_path, config.steps, config.schedule
        self.log = StepLog(run_dir, ctx.rank, socket.gethostname(), steps_kept(config.schedule))
        self.due = Every()
        idle = self.write_progress if ctx.local_rank == 0 else None  # the step it really finished, once it stops
        self.hang_watch = HangWatch.from_environment(ctx.rank, config.timeout_s, idle)
        if self.hang_watch is not None:
            self.hang_watch.start()

    def record(self, step_ms: float) -> None:
        if self.hang_watch is not None:
            self.hang_watch.stepped()
        self.log.add(step_ms)
        if not self.due() and self.log.steps_done < self.total:
            return
        started = time.perf_counter()
        self.log.write()
        if self.ctx.local_rank == 0:
            self.write_progress()
        self.due.took(time.perf_counter() - started)

    def write_progress(self, phase: str | None = None) -> None:
        done = self.log.steps_done
        progress = Progress(done, self.total, self.log.last_ms, phase or self.schedule.phase(done))
        write_progress(self.progress_path, dataclasses.replace(progress, rank=self.ctx.rank, host=self.log.host))

    def writing_traces(self) -> None:
        if self.ctx.local_rank == 0:
            self.write_progress("writing traces")


def _start_record(config: RunConfig, ctx: RankContext, workload: Workload, clocks: list[ClockOffset]) -> RunRecord:
    return RunRecord(
        run_id=config.run_id,
        config=config,
        versions=versions(),
        world_size=ctx.world_size,
        hosts=sorted({c.host for c in clocks}),
        model=workload.name,
        parameters=workload.parameter_count,
        parameter_bytes=workload.parameter_bytes,
        # per parameter, registration order: `findings` re-buckets them as DDP would for another cap
        parameter_sizes=workload.parameter_sizes,
        start_time=now(),
        clock_offsets=clocks,
        tf32=tf32_settings(),
    )


def _final_record(started: RunRecord, ranks: list[RankResult]) -> RunRecord:
    return dataclasses.replace(
        started,
        status="complete",
        end_time=now(),
        steps_completed=min(r.steps_done for r in ranks),
        link_probe=ranks[0].link_probe,  # the slowest rank's times: the same on every rank
        link_tiers=ranks[0].link_tiers,
        cast_costs=ranks[0].cast_costs,  # rank 0's device
        ranks=[r.record for r in ranks],
    )
