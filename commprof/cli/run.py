"""`commprof run`: instrumented DDP training, traces per rank, and a report."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from commprof.cli import console
from commprof.cli.common import check_model, launch_with_progress, write_and_show
from commprof.cli.options import with_run_options


@with_run_options()
def run(request, quiet: bool, emit_sbatch: Annotated[bool, typer.Option(
        "--emit-sbatch", help="Print a SLURM batch script that runs this command on --nodes nodes, and exit.")] = False
        ) -> None:
    """Train a model with DDP on N ranks under the PyTorch profiler, then report where the step time went.

    Several nodes: run the same command on each with --nodes, --rdzv-endpoint and --run-id; inside
    a SLURM job step (srun --ntasks-per-node=1) those come from SLURM's environment."""
    if emit_sbatch:
        from commprof.launch.slurm import sbatch_script

        console.out.print(sbatch_script(request.nodes, request.gpus, _without(request.cli_args, _DERIVED_IN_SLURM)),
                          markup=False, highlight=False, end="")
        return
    from commprof.errors import RunFailed
    from commprof.worker.mpi_rank import started_by_mpi_launcher
    from commprof.launch.resolve import MachineProbe, resolve
    from commprof.pipeline import report_from_traces

    if started_by_mpi_launcher(os.environ):
        return _as_one_mpi_rank(request, quiet)
    config = resolve(request, MachineProbe.detect())
    workload = check_model(config)
    console.info(f"run {config.run_id}: {workload.name} ({workload.parameter_count:,} parameters) on "
                 f"{config.world_size} {config.device} rank(s), {config.backend}, "
                 f"bucket_cap_mb={config.ddp.bucket_cap_mb:g}", quiet)
    try:
        result = launch_with_progress(config, config.steps, quiet)
    except RunFailed as failure:
        raise RunFailed(f"{failure}{_partial_report(failure, config.reports_dir)}") from None
    if not result.has_rank_zero:
        console.info(f"traces of ranks {', '.join(map(str, result.ranks_here))} written to {result.run_dir}/; "
                     "the node that runs rank 0 writes the report", quiet)
        return
    report, timeline = report_from_traces([result.run_dir], name=result.run_id, kind="run")
    write_and_show(report, config.reports_dir, quiet, traces=result.run_dir, timeline=timeline)


def _as_one_mpi_rank(request, quiet: bool) -> None:
    """`mpirun -n N commprof run`: this process is one rank; rank 0 writes the report."""
    from commprof.worker.mpi_rank import run_as_mpi_rank
    from commprof.launch.resolve import MachineProbe
    from commprof.pipeline import report_from_traces

    mine = run_as_mpi_rank(request, MachineProbe.detect())
    if mine is not None:
        config, run_dir = mine
        report, timeline = report_from_traces([run_dir], name=config.run_id, kind="run")
        write_and_show(report, config.reports_dir, quiet, traces=run_dir, timeline=timeline)


_DERIVED_IN_SLURM = ("--nodes", "--rdzv-endpoint", "--run-id")


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


def _partial_report(failure, reports_dir) -> str:
    """After a failure: a report of the completed steps, marked incomplete, when traces survived."""
    from commprof.errors import CommprofError
    from commprof.pipeline import prepare_report_dir, report_from_traces, write_report

    if failure.run_dir is None or not failure.run_dir.is_dir():
        return ""
    if not any(failure.run_dir.glob("*.pt.trace.json")):
        return f"; no trace was written before the failure (run.json and step logs in {failure.run_dir}/)"
    try:
        report, timeline = report_from_traces([failure.run_dir], name=failure.run_dir.name, kind="run")
        written = write_report(report, prepare_report_dir(reports_dir, report.name), timeline)
    except (CommprofError, OSError) as exc:
        return f"; traces kept in {failure.run_dir}/, no partial report ({str(exc).splitlines()[0]})"
    return f"; traces kept in {failure.run_dir}/, partial report (marked incomplete): {written.html_path}"
