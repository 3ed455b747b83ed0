"""`commprof backends`: the live capability matrix of this installation, every cell tried with 2 ranks."""

from __future__ import annotations

from contextlib import nullcontext
import json
import tempfile
from pathlib import Path
from typing import Annotated

import typer

from commprof.cli import console

BACKENDS = ("gloo", "mpi", "nccl")
DEVICES = ("cpu", "cuda")


def backends(
    json_out: Annotated[bool, typer.Option("--json", help="Print the matrix as JSON on stdout and nothing else.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress display.")] = False,
    timeout: Annotated[float, typer.Option(help="Seconds allowed for any one op before it counts as failed.")] = 30.0,
) -> None:
    """Try send, recv, broadcast, all_reduce, ... on gloo / mpi / nccl with CPU and GPU tensors, 2 ranks each."""
    from commprof.errors import CommprofError
    from commprof.errors import UsageError
    from commprof.launch.resolve import MachineProbe

    if timeout <= 0:
        raise UsageError(f"--timeout must be > 0, got {timeout:g}")
    probe = MachineProbe.detect()
    matrix: dict[str, dict[str, dict[str, list]]] = {}
    missing: dict[str, str] = {}
    for backend in BACKENDS:
        devices = [d for d in DEVICES if _device_ok(backend, d, probe, missing)]
        if not devices:
            continue
        with console.err.status(f"trying {backend} on {', '.join(devices)}") if not (quiet or json_out) else nullcontext():
            try:
                matrix[backend] = _try_backend(backend, devices, timeout)
            except CommprofError as exc:
                for device in devices:
                    missing[f"{backend}/{device}"] = str(exc)
    if json_out:
        console.out.print(json.dumps({"matrix": matrix, "not_available": missing}), markup=False)
        return
    _show(matrix, missing)



def _device_ok(backend: str, device: str, probe, missing: dict[str, str]) -> bool:
    from commprof.launch.mpi import mpi_unavailable

    key = f"{backend}/{device}"
    if device == "cuda" and not probe.cuda_available:
        missing[key] = "CUDA is not available on this machine"
    elif backend == "nccl" and device == "cpu":
        missing[key] = "NCCL has no CPU transport"
    elif backend == "nccl" and not probe.nccl_available:
        missing[key] = "this torch build has no NCCL"
    elif backend == "mpi" and device == "cuda":
        missing[key] = "mpi4py is used on CPU memory (this torch has no MPI backend)"
    elif backend == "mpi" and mpi_unavailable():
        missing[key] = mpi_unavailable()
    else:
        return True
    return False


def _try_backend(backend: str, devices: list[str], timeout: float) -> dict:
    with tempfile.TemporaryDirectory(prefix="commprof-matrix-") as tmp:
        out = Path(tmp) / "matrix.json"
        if backend == "mpi":
            from commprof.launch.mpi import run_under_mpi

            plan_path = Path(tmp) / "plan.json"
            plan_path.write_text(json.dumps({"out": str(out)}))
            run_under_mpi(2, "commprof.worker.matrix", [str(plan_path)], timeout * 12)
        else:
            from commprof.launch.launcher import launch
            from commprof.worker.matrix import matrix_main
            from commprof.launch.resolve import MachineProbe, RunRequest, resolve

            cuda_only = devices == ["cuda"]
            request = RunRequest(device="cuda" if cuda_only else "cpu", backend=backend, procs=None if cuda_only else 2,
                                 gpus=2 if cuda_only else None, traces_dir=Path(tmp) / "t", reports_dir=Path(tmp) / "r",
                                 timeout_s=timeout)
            config = resolve(request, MachineProbe.detect())
            launch(config, Path(tmp) / "progress.json", entrypoint=matrix_main,
                   payload={"run": config.to_dict(), "devices": devices, "out": str(out)})
        return json.loads(out.read_text())


def _show(matrix: dict, missing: dict[str, str]) -> None:
    from rich import box
    from rich.table import Table

    from commprof.instrument.matrix import MATRIX_OPS

    table = Table(title="Capability matrix of this installation (2 ranks; works / fails / - not available here)",
                  title_justify="left", box=box.SIMPLE_HEAD)
    table.add_column("op")
    for backend in BACKENDS:
        for device in DEVICES:
            table.add_column(f"{backend} {device.replace('cuda', 'gpu')}", justify="center")
    reasons: dict[str, str] = {}
    for op in MATRIX_OPS:
        row = [op]
        for backend in BACKENDS:
            for device in DEVICES:
                cell = matrix.get(backend, {}).get(device, {}).get(op)
                if cell is None:
                    row.append("-")
                elif cell[0]:
                    row.append("works")
                else:
                    row.append("fails")
                    reasons[f"{backend} {device} {op}"] = cell[1]
        table.add_row(*row)
    console.out.print(table)
    for key, why in reasons.items():
        console.out.print(f"fails: {key}: {why}", markup=False)
    for key, why in missing.items():
        console.out.print(f"not available here: {key}: {why}", markup=False)
