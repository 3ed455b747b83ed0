"""The one way every command starts its ranks: torch's elastic launch, or mpirun when the ranks talk
MPI through mpi4py (which needs the MPI launcher's environment)."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import tempfile
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from commprof.backends import by_name
from commprof.config import RunConfig
from commprof.launch.horovod import horovod_rendezvous
from commprof.launch.module_argv import module_arguments
from commprof.launch.result import LaunchResult

Watch = Callable[[Path, int | None], AbstractContextManager]  # shows a launch's progress from its progress file
# torchrun's own words (torch/distributed/run.py) when it sets OMP_NUM_THREADS for several ranks on a node
TORCHRUN_OMP_WARNING = (
    "*****************************************\n"
    "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your system being "
    "overloaded, please further tune the variable for optimal performance in your application as needed. \n"
    "*****************************************"
)


def torchrun_environment(procs_per_node: int, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """What torchrun adds to a script's ranks beyond the rendezvous variables (elastic_launch adds none of it):
    OMP_NUM_THREADS=1 when several ranks share the node and the user set none."""
    return {"OMP_NUM_THREADS": "1"} if "OMP_NUM_THREADS" not in environ and procs_per_node > 1 else {}


@dataclass(frozen=True)
class Task:
    """What every rank runs: `elastic(payload, progress_path)` under torch's elastic launch, forked from
    commprof's fork server on CPU (launch/forkserver.py); a `program` is, where ranks are spawned (GPU), the process
    `python -m <program> payload.json progress.json`, as torchrun starts a script; under mpirun,
    `python -m <mpi_module> plan.json`, whose plan holds the same payload."""

    elastic: Callable[[dict[str, Any], str], dict[str, Any] | None] | None
    mpi_module: str | None  # None: this task never runs under mpirun
    payload: dict[str, Any]
    # a limit on the whole mpirun's time; None (the default): none, a healthy job runs as long as it needs
    mpi_time_limit_s: float | None = None
    program: str | None = None  # a module each rank runs as its own Python program, instead of `elastic`


def uses_mpirun(config: RunConfig, task: Task) -> bool:
    return by_name(config.backend).launched_by == "mpirun" and task.mpi_module is not None


def run_job(config: RunConfig, task: Task, total_steps: int | None = None, watch: Watch | None = None) -> LaunchResult:
    """Start every rank of this node on `task` and wait for them; RunFailed names
    the rank and the cause when one fails."""
    with tempfile.TemporaryDirectory(prefix="commprof-job-") as tmp, horovod_rendezvous(config) as config:
        if config.horovod_rendezvous:
            task = dataclasses.replace(task, payload={**task.payload, "horovod_rendezvous": config.horovod_rendezvous})
        progress = Path(tmp) / "progress.json"
        with watch(progress, total_steps) if watch else nullcontext():
            if uses_mpirun(config, task):
                return _under_mpirun(config, task, progress, Path(tmp))
            from commprof.launch import forkserver
            from commprof.launch.launcher import launch

            environment = torchrun_environment(config.procs_per_node) if task.program else None
            if task.program is None or forkserver.start_method(config.device) == "forkserver":
                assert task.elastic is not None  # a task is a program or an elastic entry point
                return launch(config, task.elastic, (task.payload, str(progress)), environment, hang_dir=Path(tmp))
            (Path(tmp) / "payload.json").write_text(json.dumps(task.payload))
            arguments = tuple(module_arguments(task.program, str(Path(tmp) / "payload.json"), str(progress)))
            return launch(config, sys.executable, arguments, environment, hang_dir=Path(tmp))


def _under_mpirun(config: RunConfig, task: Task, progress: Path, tmp: Path) -> LaunchResult:
    assert task.mpi_module is not None  # uses_mpirun: the task has one
    from commprof.launch.mpi_job import run_under_mpirun

    return run_under_mpirun(config, task.mpi_module, task.payload, progress, tmp, task.mpi_time_limit_s)
