"""`commprof run`: instrumented DDP training, traces per rank, and a report."""

from __future__ import annotations

from typing import Annotated

import typer

from commprof.cli import console
from commprof.cli.options import with_run_options


@with_run_options()
def run(request, quiet: bool, emit_sbatch: Annotated[bool, typer.Option(
        "--emit-sbatch", help="Print a SLURM batch script that runs this command on --nodes nodes, and exit.")] = False
        ) -> None:
    """Train a model with DDP on N ranks under the PyTorch profiler, then report where the step time went.

    Several nodes: run the same command on each with --nodes, --rdzv-endpoint and --run-id; inside
    a SLURM job step (srun --ntasks-per-node=1) those come from SLURM's environment."""
    from commprof.cli.progress import ConsoleFeedback
    from commprof.commands import run as command

    if emit_sbatch:
        console.out.print(command.sbatch(request), markup=False, highlight=False, end="")
        return
    console.finish(command.run(request, ConsoleFeedback(quiet)), quiet)
