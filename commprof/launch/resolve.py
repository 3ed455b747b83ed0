"""Turn what the user asked for (with 'auto's) into a concrete RunConfig for this machine."""

from __future__ import annotations

import os
import secrets
import time
from dataclasses import dataclass, replace
from typing import Mapping

from commprof.backends import BACKENDS, TABLE, by_name
from commprof.config import DEVICES, RunConfig, RunRequest, by_fields
from commprof.errors import UsageError
from commprof.launch.preflight import check_setup
from commprof.launch.slurm import apply_slurm, slurm_step
from commprof.results.store import check_writable

DEFAULT_CPU_RANKS = 2


@dataclass(frozen=True)
class MachineProbe:
    """What this installation and machine can do; `detect()` asks torch."""

    cuda_available: bool
    gpu_count: int
    nccl_available: bool
    mpi_available: bool  # torch's native MPI backend
    mpi4py_problem: str | None = "not checked"  # why MPI through mpi4py + mpirun cannot run, or None

    @classmethod
    def detect(cls) -> MachineProbe:
        import torch
        import torch.distributed as dist

        from commprof.launch.mpi import mpi_unavailable

        cuda = torch.cuda.is_available()
        return cls(
            cuda,
            torch.cuda.device_count() if cuda else 0,
            dist.is_nccl_available(),
            dist.is_mpi_available(),
            mpi_unavailable(),
        )


def new_run_id() -> str:
    """Time-stamped and random, so two runs started in the same second still differ."""
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"


def resolve(
    request: RunRequest, probe: MachineProbe, env: Mapping[str, str] = os.environ, launching: bool = True
) -> RunConfig:
    step = slurm_step(env)
    if step is not None:
        nodes, endpoint, run_id = apply_slurm(request.nodes, request.rdzv_endpoint, request.run_id, step)
        request = replace(request, nodes=nodes, rdzv_endpoint=endpoint, run_id=run_id)
    device = resolve_device(request.device, request.gpus, probe)
    backend = resolve_backend(request.backend, device, probe)
    ranks = resolve_ranks(request.procs, request.gpus, device, probe)
    if backend == "mpi" and not probe.mpi_available and request.nodes > 1:
        raise UsageError("--backend mpi runs on one node in this version (mpirun on this node starts every rank)")
    if request.nodes > 1 and request.run_id is None:
        raise UsageError("--nodes > 1: pass the same --run-id NAME on every node, so all nodes write one run folder")
    run_id = request.run_id or new_run_id()
    check_writable(request.traces_dir, request.reports_dir)
    resolved = {
        "run_id": run_id,
        "device": device,
        "backend": backend,
        "procs_per_node": ranks,
        "script_output": request.script_output or "none",
        "timeout_given": "timeout_s" in request.named,
        "backend_given": "backend" in request.named,
    }
    config = by_fields(
        RunConfig, vars(request), **resolved, ddp_forced=request.ddp_forced, launch_id=secrets.token_hex(8)
    )
    if request.nodes == 1 and (config.run_dir.exists() or config.report_dir.exists()):
        raise UsageError(
            f"run id {run_id!r} already exists in {config.traces_dir} or {config.reports_dir}; "
            "choose another --run-id (commprof never overwrites a run)"
        )
    if launching and by_name(backend).launched_by != "mpirun":
        check_setup(config, environ=env)  # torch's elastic launch will start: this node's name, endpoint, interfaces
    return config


def resolve_device(device: str, gpus: int | None, probe: MachineProbe) -> str:
    """The device the ranks run on: `device` (auto: cuda where a GPU is visible), checked against `gpus` and this
    machine. Every command that launches ranks resolves it here (run, sweep, compare, scale, bench)."""
    if device not in ("auto", *DEVICES):
        raise UsageError(f"--device must be one of auto, {', '.join(DEVICES)}, got {device!r}")
    if gpus is not None:
        if gpus < 1:
            raise UsageError(f"--gpus must be >= 1, got {gpus}")
        if device == "cpu":
            raise UsageError("--gpus and --device cpu contradict each other; use --procs N for CPU ranks")
        if not probe.cuda_available:
            raise UsageError(f"--gpus {gpus}: CUDA is not available on this machine; use --procs N for CPU ranks")
        if gpus > probe.gpu_count:
            raise UsageError(f"--gpus {gpus}: only {probe.gpu_count} GPU(s) visible on this node")
    if device == "cuda" and not probe.cuda_available:
        raise UsageError("--device cuda: CUDA is not available on this machine")
    if device == "auto":
        return "cuda" if probe.cuda_available else "cpu"
    return device


def resolve_backend(backend: str, device: str, probe: MachineProbe) -> str:
    if backend not in ("auto", *BACKENDS):
        raise UsageError(f"--backend must be one of auto, {', '.join(BACKENDS)}, got {backend!r}")
    if backend == "auto":
        return "nccl" if device == "cuda" and probe.nccl_available else "gloo"
    chosen = by_name(backend)
    if device not in chosen.devices:
        others = " or ".join(b.name for b in TABLE if device in b.devices)
        raise UsageError(f"--backend {backend}: {chosen.no_device(device)}; on {device.upper()} use --backend {others}")
    if backend == "nccl" and not probe.nccl_available:
        raise UsageError("--backend nccl: this torch build has no NCCL support")
    if backend == "mpi" and not probe.mpi_available and probe.mpi4py_problem:
        raise UsageError(f"--backend mpi: this torch build has no MPI backend and {probe.mpi4py_problem}")
    if backend == "mpi" and device == "cuda" and not probe.mpi_available:
        raise UsageError("--backend mpi through mpi4py all-reduces CPU tensors; use --device cpu")
    return backend


def resolve_ranks(procs: int | None, gpus: int | None, device: str, probe: MachineProbe) -> int:
    """Ranks on this node: one per GPU (`gpus`, default every visible one), or `procs` CPU processes."""
    if procs is not None and procs < 1:
        raise UsageError(f"--procs must be >= 1, got {procs}")
    if device == "cuda":
        if procs is not None:
            raise UsageError("--procs is for CPU ranks; on CUDA use --gpus N (one rank per GPU)")
        return gpus or probe.gpu_count
    return procs or DEFAULT_CPU_RANKS
