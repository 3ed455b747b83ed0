"""Per-rank entry point of `commprof run`, started by torch elastic: train with DDP under the profiler."""

from __future__ import annotations

import socket
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from commprof.config import RunConfig
from commprof.instrument.ddp import ddp_logging_data
from commprof.instrument.profiler import make_profiler, trace_path
from commprof.launch.progress import Progress, write_progress
from commprof.launch.rank import (RankContext, claim_run_dir, device_name, distributed, exit_on_error,
                                  mpi_through_mpi4py, versions, write_json_atomic)
from commprof.launch.training import Trainer, make_batches
from commprof.workloads import load_workload


@exit_on_error
def worker_main(config_dict: dict[str, Any], progress_path: str) -> dict[str, Any]:
    return run_worker(RunConfig.from_dict(config_dict), progress_path)


def run_worker(config: RunConfig, progress_path: str, store: Any = None) -> dict[str, Any]:
    with distributed(config, store) as ctx:
        started = datetime.now(timezone.utc)
        run_dir = claim_run_dir(config, ctx.rank)
        result = _train(config, ctx, run_dir, Path(progress_path))
        infos: list[Any] = [None] * ctx.world_size
        dist.all_gather_object(infos, result)
        if ctx.rank == 0:
            _write_run_json(config, run_dir, infos, started)
        dist.barrier()  # every trace and run.json exists before any node starts analysing
        return {"rank": ctx.rank, "run_id": config.run_id, "run_dir": str(run_dir)}


def _train(config: RunConfig, ctx: RankContext, run_dir: Path, progress_path: Path) -> dict[str, Any]:
    torch.manual_seed(config.seed)  # identical initial weights on every rank
    workload = load_workload(config.model, config.model_size)
    batches = make_batches(workload, config.batch_size, config.seed, ctx.rank, ctx.device)
    trainer = Trainer(workload.model, workload, batches, config.ddp, ctx.device, config.precision,
                      mpi_gradients=mpi_through_mpi4py(config))
    step_ms: list[float] = []
    with make_profiler(config.schedule, ctx.device.type == "cuda", run_dir, ctx.rank) as prof:
        for step in range(config.steps):
            step_ms.append(trainer.step())
            prof.step()
            if ctx.local_rank == 0:
                write_progress(progress_path, Progress(step + 1, config.steps, step_ms[-1]))
    if ctx.local_rank == 0:
        write_progress(progress_path, Progress(config.steps, config.steps, step_ms[-1], "writing traces"))
    return {
        "rank": ctx.rank,
        "host": socket.gethostname(),
        "device": device_name(ctx.device),
        "trace": trace_path(run_dir, ctx.rank).name,
        "step_ms": step_ms,
        "parameters": workload.parameter_count,
        "parameter_bytes": workload.parameter_bytes,
        "model": workload.name,
        "ddp": ddp_logging_data(trainer.ddp),
    }


def _write_run_json(config: RunConfig, run_dir: Path, infos: list[dict[str, Any]], started: datetime) -> None:
    first = infos[0]
    write_json_atomic(run_dir / "run.json", {
        "run_id": config.run_id,
        "config": config.to_dict(),
        "versions": versions(),
        "world_size": len(infos),
        "hosts": sorted({i["host"] for i in infos}),
        "model": first["model"],
        "parameters": first["parameters"],
        "parameter_bytes": first["parameter_bytes"],
        "start_time": started.isoformat(),
        "end_time": datetime.now(timezone.utc).isoformat(),
        "ranks": [{k: i[k] for k in ("rank", "host", "device", "trace", "step_ms", "ddp")} for i in infos],
    })
