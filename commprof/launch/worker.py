"""Per-rank entry point, started by torch elastic: train with DDP under the profiler."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import socket
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import get_error_handler

import commprof
from commprof.config import RunConfig
from commprof.instrument.ddp import ddp_logging_data, wrap_ddp
from commprof.instrument.profiler import cuda_synchronize, make_profiler, trace_path
from commprof.launch.progress import Progress, write_progress
from commprof.workloads import load_workload
from commprof.workloads.workload import call_model, to_device

DISTINCT_BATCHES = 4
_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def worker_main(config_dict: dict[str, Any], progress_path: str) -> dict[str, Any]:
    """Entry point: on any error, record it for the launcher and leave at once.

    Leaving with os._exit skips the C++ teardown of a process group whose peers are gone,
    which otherwise aborts noisily after the real error has been recorded."""
    try:
        return _worker(RunConfig.from_dict(config_dict), progress_path)
    except BaseException as exc:
        get_error_handler().record_exception(exc)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)


def _worker(config: RunConfig, progress_path: str) -> dict[str, Any]:
    rank, local_rank = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    device = torch.device("cuda", local_rank) if config.device == "cuda" else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    dist.init_process_group(config.backend, timeout=timedelta(seconds=config.timeout_s))
    started = datetime.now(timezone.utc)
    try:
        run_dir = _claim_run_dir(config, rank)
        result = _train(config, rank, local_rank, device, run_dir, Path(progress_path))
        infos: list[Any] = [None] * dist.get_world_size()
        dist.all_gather_object(infos, result)
        if rank == 0:
            _write_run_json(config, run_dir, infos, started)
        dist.barrier()  # every trace and run.json exists before any node starts analysing
        return {"rank": rank, "run_id": config.run_id, "run_dir": str(run_dir)}
    finally:
        dist.destroy_process_group()


def _claim_run_dir(config: RunConfig, rank: int) -> Path:
    """Rank 0 creates the run folder exclusively; everyone learns whether that worked."""
    status = [""]
    if rank == 0:
        try:
            config.run_dir.mkdir(parents=True, exist_ok=False)
        except FileExistsError:
            status[0] = f"run folder {config.run_dir} already exists; commprof never overwrites a run"
        except OSError as exc:
            status[0] = f"cannot create run folder {config.run_dir}: {exc.strerror}"
    dist.broadcast_object_list(status, src=0)
    if status[0]:
        raise RuntimeError(status[0])
    return config.run_dir


def _train(config: RunConfig, rank: int, local_rank: int, device: torch.device, run_dir: Path,
           progress_path: Path) -> dict[str, Any]:
    torch.manual_seed(config.seed)  # identical initial weights on every rank
    workload = load_workload(config.model, config.model_size)
    model = workload.model.to(device)
    ddp = wrap_ddp(model, config.ddp, device)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=1e-3, momentum=0.9)
    gen = torch.Generator().manual_seed(config.seed * 1_000_003 + rank)
    batches = [to_device(workload.make_batch(config.batch_size, gen), device) for _ in range(DISTINCT_BATCHES)]
    use_cuda = device.type == "cuda"
    amp_dtype = _DTYPES.get(config.precision)
    scaler = torch.amp.GradScaler(device.type, enabled=config.precision == "fp16")
    accum = config.ddp.grad_accum
    step_ms: list[float] = []

    with make_profiler(config.schedule, use_cuda, run_dir, rank) as prof:
        for step in range(config.steps):
            cuda_synchronize(use_cuda)
            start = time.perf_counter()
            for micro in range(accum):
                inputs, target = batches[(step * accum + micro) % DISTINCT_BATCHES]
                sync = ddp.no_sync() if micro < accum - 1 else contextlib.nullcontext()
                with sync:
                    with torch.autocast(device.type, dtype=amp_dtype or torch.float32, enabled=amp_dtype is not None):
                        loss = workload.loss(call_model(ddp, inputs), target) / accum
                    scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad(set_to_none=True)
            cuda_synchronize(use_cuda)
            step_ms.append((time.perf_counter() - start) * 1e3)
            prof.step()
            if local_rank == 0:
                write_progress(progress_path, Progress(step + 1, config.steps, step_ms[-1]))
    if local_rank == 0:
        write_progress(progress_path, Progress(config.steps, config.steps, step_ms[-1], "writing traces"))
    return {
        "rank": rank,
        "host": socket.gethostname(),
        "device": torch.cuda.get_device_name(device) if use_cuda else platform.processor() or platform.machine(),
        "trace": trace_path(run_dir, rank).name,
        "step_ms": step_ms,
        "parameters": workload.parameter_count,
        "parameter_bytes": workload.parameter_bytes,
        "model": workload.name,
        "ddp": ddp_logging_data(ddp),
    }


def _versions() -> dict[str, Any]:
    nccl = None
    if torch.cuda.is_available() and dist.is_nccl_available():
        nccl = ".".join(str(v) for v in torch.cuda.nccl.version())
    return {"commprof": commprof.__version__, "torch": torch.__version__, "cuda": torch.version.cuda,
            "nccl": nccl, "python": platform.python_version()}


def _write_run_json(config: RunConfig, run_dir: Path, infos: list[dict[str, Any]], started: datetime) -> None:
    first = infos[0]
    meta = {
        "run_id": config.run_id,
        "config": config.to_dict(),
        "versions": _versions(),
        "world_size": len(infos),
        "hosts": sorted({i["host"] for i in infos}),
        "model": first["model"],
        "parameters": first["parameters"],
        "parameter_bytes": first["parameter_bytes"],
        "start_time": started.isoformat(),
        "end_time": datetime.now(timezone.utc).isoformat(),
        "ranks": [{k: i[k] for k in ("rank", "host", "device", "trace", "step_ms", "ddp")} for i in infos],
    }
    tmp = run_dir / ".run.json.tmp"
    tmp.write_text(json.dumps(meta, indent=2))
    os.replace(tmp, run_dir / "run.json")
