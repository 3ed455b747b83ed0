"""`commprof run`: instrumented DDP training, traces per rank, and a report."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Optional

import typer

from commprof.cli import console
from commprof.cli.options import script_argument, with_run_options


@with_run_options()
def run(
    request,
    quiet: bool,
    json_out: bool,
    script: Annotated[
        Optional[list[str]],
        script_argument(
            "`commprof run --gpus 8 -- train.py --lr 0.1` (or -- -m package.module args), run unmodified on every "
            "rank as torchrun would."
        ),
    ] = None,
    emit_sbatch: Annotated[
        bool,
        typer.Option(
            "--emit-sbatch", help="Print a SLURM batch script that runs this command on --nodes nodes, and exit."
        ),
    ] = False,
) -> None:
    """Profile DDP training and report where the step time goes.

    Trains your own script (after --) or a built-in model on N ranks under the PyTorch profiler.

    Several nodes: run the same command on each with --nodes, --rdzv-endpoint and --run-id; inside
    a SLURM job step (srun --ntasks-per-node=1) those come from SLURM's environment."""
    from commprof.cli.progress import ConsoleFeedback
    from commprof.commands import run as command

    request = dataclasses.replace(request, script=tuple(script or ()))
    if quiet and request.script_output is None:  # --quiet, --json: the script's own lines only when asked for
        request = dataclasses.replace(request, script_output="none")
    if emit_sbatch:
        console.out.print(command.sbatch(request), markup=False, highlight=False, end="")
        return
    outcome = command.run(request, ConsoleFeedback(quiet))
    console.finish(outcome, quiet, json_out)
    if not request.script and outcome.result is not None:
        console.info(NEXT, quiet)


NEXT = "next: your own training script, unmodified: commprof run -- train.py ARGS (or -- -m package.module ARGS)"
