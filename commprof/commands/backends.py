"""`commprof backends`: the live capability matrix of this installation, every cell tried with 2 ranks."""

from __future__ import annotations

import dataclasses
import json
import tempfile
from pathlib import Path

from commprof.backends import BACKENDS, by_name
from commprof.commands.common import ddp_only
from commprof.commands.outcome import SILENT, Feedback, Outcome
from commprof.config import RunRequest
from commprof.errors import CommprofError, UsageError
from commprof.render.failure_words import error_text
from commprof.results.backends import DEVICES, BackendsResult

MATRIX_RANKS = 2


def backends(timeout_s: float = 30.0, feedback: Feedback = SILENT) -> Outcome:
    """Each op on each backend and device this installation has; why the others were not tried."""
    from commprof.instrument.collectives import MATRIX_OPS
    from commprof.launch.resolve import MachineProbe

    if timeout_s <= 0:
        raise UsageError(f"--timeout must be > 0, got {timeout_s:g}")
    probe = MachineProbe.detect()
    matrix: dict[str, dict[str, dict[str, list]]] = {}
    missing: dict[str, str] = {}
    for backend in BACKENDS:
        devices = []
        for device in DEVICES:
            why = _why_not(backend, device, probe)
            if why:
                missing[f"{backend}/{device}"] = why
            else:
                devices.append(device)
        if not devices:
            continue
        # one launch per device: a backend that aborts its ranks on one device (Gloo's send of a CUDA tensor between
        # two ranks on one GPU: SIGABRT, seen on an H100) must not take the other device's answers with it
        for device in devices:
            with feedback.status(f"trying {backend} on {device}"):
                try:
                    answers = _try_backend(backend, [device], timeout_s)
                except CommprofError as exc:
                    missing[f"{backend}/{device}"] = error_text(exc)
                    continue
            matrix.setdefault(backend, {}).update(answers)
    return Outcome(BackendsResult(matrix=matrix, not_available=missing, ops=list(MATRIX_OPS)))


def _why_not(name: str, device: str, probe) -> str | None:
    row = by_name(name)
    if device == "cuda" and not probe.cuda_available:
        return "CUDA is not available on this machine"
    if device not in row.devices:
        return row.no_device(device)
    if name == "nccl" and not probe.nccl_available:
        return "this torch build has no NCCL"
    if row.gpu_per_rank and probe.gpu_count < MATRIX_RANKS:
        return f"{row.title} needs a GPU for each of the {MATRIX_RANKS} ranks; {probe.gpu_count} visible"
    if row.launched_by == "mpirun" and device == "cuda":
        return "mpi4py is used on CPU memory (this torch has no MPI backend)"
    if row.launched_by == "mpirun":
        return probe.mpi4py_problem
    return None


def _try_backend(backend: str, devices: list[str], timeout_s: float) -> dict:
    from commprof.launch.job import Task, run_job
    from commprof.launch.resolve import MachineProbe, resolve
    from commprof.worker.matrix import matrix_main

    with tempfile.TemporaryDirectory(prefix="commprof-matrix-") as tmp:
        out = Path(tmp) / "matrix.json"
        cuda_only = devices == ["cuda"]
        probe = MachineProbe.detect()
        if cuda_only and probe.gpu_count == 1:  # Gloo's two ranks share the one GPU (worker.rank.gpu_index)
            probe = dataclasses.replace(probe, gpu_count=MATRIX_RANKS)
        request = RunRequest(
            device="cuda" if cuda_only else "cpu",
            backend=backend,
            procs=None if cuda_only else MATRIX_RANKS,
            gpus=MATRIX_RANKS if cuda_only else None,
            traces_dir=Path(tmp) / "t",
            reports_dir=Path(tmp) / "r",
            timeout_s=timeout_s,
        )
        ddp_only(request, "backends")
        config = resolve(request, probe)
        payload = {"run": config.to_dict(), "devices": devices, "out": str(out)}
        # under mpirun the whole matrix runs in one go: the time of every op in it
        run_job(config, Task(matrix_main, "commprof.worker.matrix", payload, mpi_time_limit_s=timeout_s * 12))
        return json.loads(out.read_text())
