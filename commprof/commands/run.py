"""`commprof run`: instrumented DDP training on every rank, one trace per rank, and the report."""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import signal
import sys
from pathlib import Path
from typing import Mapping

from commprof.commands.common import check_model, describe, prepare_figures, training
from commprof.commands.live import watching
from commprof.commands.outcome import SILENT, Feedback, Outcome
from commprof.commands.reporting import report_from_traces, write_report
from commprof.commands.unfinished import failed_run, interrupted_run
from commprof.config import RunConfig, RunRequest
from commprof.errors import Interrupted, RunFailed, UsageError
from commprof.kinds import KINDS
from commprof.launch.runlog import read_run_json
from commprof.launch.script_run import finish_script_run
from commprof.render import progress_words
from commprof.render.kind_words import words_of
from commprof.settings import applied_to_a_script

DERIVED_IN_SLURM = ("--nodes", "--rdzv-endpoint", "--run-id")


def run(request: RunRequest, feedback: Feedback = SILENT, env: Mapping[str, str] = os.environ) -> Outcome:
    """Resolve the options for this machine, check the model, launch, and report on the traces.
    Under an external MPI launcher this process is one rank of the job."""
    from commprof.launch import forkserver
    from commprof.launch.job import TORCHRUN_OMP_WARNING, run_job, torchrun_environment
    from commprof.launch.resolve import MachineProbe, resolve
    from commprof.worker.mpi_identity import started_by_mpi_launcher

    if started_by_mpi_launcher(env):
        return _as_one_mpi_rank(request)
    forkserver.start_early(request)
    if request.script and request.script_output is None:
        request = dataclasses.replace(request, script_output="all")  # run shows it; the many-launch commands do not
    config = resolve(request, MachineProbe.detect())
    if config.script:
        check_script(request)
        applied = ", ".join(f"{k}={v}" for k, v in applied_to_a_script(config.ddp, config.ddp_forced).items())
        feedback.info(
            f"run {config.run_id}: {' '.join(config.script)} on {config.world_size} {config.device} rank(s), "
            f"{config.backend}" + (f"; its DDP gets {applied}" if applied else "")
        )
        if torchrun_environment(config.procs_per_node):
            feedback.info(TORCHRUN_OMP_WARNING)
    else:
        workload = check_model(config, feedback)
        settings = words_of(KINDS[config.strategy]).said(config.options)
        feedback.info(f"run {config.run_id}: {describe(config, workload)}, {settings}")
    steps = config.max_steps if config.script else config.steps  # a script without --max-steps: its loop decides
    try:
        prepare_figures()
        launched = run_job(config, training(config), steps, watching(config, feedback))
    except RunFailed as failure:
        raise failed_run(failure, config) from None
    except Interrupted as stop:
        raise interrupted_run(stop, config) from None
    if config.script:
        finish_script_run(launched.run_dir, config.launch_id)
    if not launched.has_rank_zero:
        return Outcome(None, note=progress_words.traces_elsewhere(launched.ranks_here, str(launched.run_dir)))
    if config.script:
        record = read_run_json(launched.run_dir)
        _covered_by_the_window(config, (record.steps_completed if record else None) or 0)
    try:
        outcome = report_run(launched.run_dir, config.reports_dir)
    except KeyboardInterrupt as stop:  # Interrupted too
        raise Interrupted(
            getattr(stop, "signum", signal.SIGINT),
            f"interrupted while writing the report; the run is complete (`commprof analyze {launched.run_dir} "
            f"--name {launched.run_dir.name}-report` reports on it)",
            launched.run_dir,
        ) from None
    return dataclasses.replace(outcome, logs=launched.run_dir / "logs") if config.script else outcome


def _covered_by_the_window(config: RunConfig, ran: int) -> None:
    """A script decides how many steps it runs: one that ended before the profiler's first recorded step is told so
    in one line, with the option to change; one that ended inside the window is reported on what it recorded (its
    report says which, analysis/short_window.py); one that never stepped an optimizer is one window."""
    schedule = config.schedule
    first = schedule.wait + schedule.warmup + 1
    if ran == 0:  # it never stepped an optimizer: its whole run is the one window (worker/script.py)
        return
    if ran < first:
        raise UsageError(
            f"the script ran {ran} optimizer step(s) and ended before the profiler's first recorded step, step "
            f"{first} (--wait {schedule.wait} --warmup {schedule.warmup}): profile earlier, e.g. --schedule "
            f"0,0,{ran}, or let the script run longer; its traces and run.json are in {config.run_dir}/"
        )


def report_run(run_dir: Path, reports_dir: Path) -> Outcome:
    """The report of a finished run, written to reports_dir/<run id>/."""
    report, timeline = report_from_traces([run_dir], name=run_dir.name, kind="run", bench_dir=reports_dir)
    return Outcome(report, write_report(report, reports_dir, report.name, timeline, run_dir), traces=run_dir)


# what makes no sense with the user's own script: it builds its model, data and training loop itself
NOT_WITH_A_SCRIPT = {
    "model": "--model",
    "model_size": "--model-size",
    "batch_size": "--batch-size",
    "precision": "--precision",
    "steps": "--steps",
}


def check_script(request: RunRequest) -> None:
    """One clear line before anything starts: a script or module that is not there, or options it cannot take."""
    defaults = RunRequest()
    given = [
        flag
        for name, flag in NOT_WITH_A_SCRIPT.items()
        if name in request.named or getattr(request, name) != getattr(defaults, name)
    ]
    if request.ddp.grad_accum != 1 or "grad_accum" in request.named:
        given.append("--grad-accum")
    if given:
        raise UsageError(
            f"{', '.join(given)}: not with a script, which builds its own model, data and loop "
            "(--max-steps ends it early)"
        )
    if request.script[0] == "-m":
        if len(request.script) < 2 or not module_found(request.script[1]):
            raise UsageError(f"-m {' '.join(request.script[1:2])}: no such module here")
    elif not Path(request.script[0]).is_file():
        raise UsageError(f"{request.script[0]}: no such script")


def module_found(name: str) -> bool:
    """Whether `python -m name` would find it from here (the working directory first, as python puts it)."""
    sys.path.insert(0, os.getcwd())
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # its package is missing
        return False
    finally:
        sys.path.remove(os.getcwd())


def sbatch(request: RunRequest) -> str:
    """A SLURM batch script that runs this command on request.nodes nodes."""
    from commprof.launch.slurm import sbatch_script

    script = ["--", *request.script] if request.script else []
    return sbatch_script(
        request.nodes, request.gpus, request.procs, _without(request.cli_args, DERIVED_IN_SLURM) + script
    )


def _as_one_mpi_rank(request: RunRequest) -> Outcome:
    """`mpirun -n N commprof run`: this process is one rank; rank 0 writes the report."""
    from commprof.launch.resolve import MachineProbe
    from commprof.worker.mpi_rank import run_as_mpi_rank

    mine = run_as_mpi_rank(request, MachineProbe.detect())
    if mine is None:
        return Outcome(None)
    config, run_dir = mine
    assert isinstance(config, RunConfig)  # what run_as_mpi_rank hands back (typed there as object)
    return report_run(run_dir, config.reports_dir)


def _without(args: tuple[str, ...], options: tuple[str, ...]) -> list[str]:
    kept, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif arg in options:
            skip = True
        else:
            kept.append(arg)
    return kept
