"""Steps several commands share before they launch."""

from __future__ import annotations

import functools
import importlib
import threading

from commprof.commands.outcome import SILENT, Feedback
from commprof.config import RunConfig, RunRequest
from commprof.errors import ModelRunError, UsageError
from commprof.kinds import KINDS
from commprof.launch.job import Task


def check_model(config: RunConfig, feedback: Feedback = SILENT):
    """Build the model once before launching and run a tiny batch through it on the CPU, so a broken model fails
    with one clear line. A model that runs only on GPUs (CUDA-only kernels) is left to the ranks on a GPU run."""
    from commprof.workloads import check_workload, load_workload

    workload = load_workload(config.model, config.model_size)
    try:
        check_workload(workload, config.batch_size, config.seed)
    except ModelRunError as exc:
        if config.device != "cuda":
            raise
        feedback.info(f"{exc} on the CPU; the ranks run it on their GPUs")
    return workload


def describe(config: RunConfig, workload) -> str:
    return (
        f"{workload.name} ({workload.parameter_count:,} parameters) on {config.world_size} {config.device} "
        f"rank(s), {config.backend}"
    )


def ddp_only(request: RunRequest, command: str, instead: str = "") -> None:
    """The commands that are DDP's alone in this version refuse --strategy fsdp rather than ignore it."""
    kind = KINDS.get(request.strategy)
    if kind is None or not kind.default:
        raise UsageError(f"--strategy {request.strategy} is not for commprof {command}, which runs DDP{instead}")


def training(config: RunConfig) -> Task:
    """The profiled training run (commprof run, compare, scale): a built-in model, or the user's script."""
    if config.script:
        from commprof.worker.script import forked_main

        return Task(forked_main, None, config.to_dict(), program="commprof.worker.script")
    from commprof.worker.run import worker_main

    return Task(worker_main, "commprof.worker.mpi_train", config.to_dict())


@functools.cache
def prepare_figures() -> None:
    """Import the plotting library (about 1.5 s) in a thread while the ranks run, not after them; once."""
    threading.Thread(target=importlib.import_module, args=("commprof.render.plots",), daemon=True).start()
