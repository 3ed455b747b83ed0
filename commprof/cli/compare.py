"""`commprof compare`: the same workload, seed and settings on each backend, side by side."""

from __future__ import annotations

from typing import Annotated

import typer

from commprof.cli import console
from commprof.cli.options import with_run_options


@with_run_options(exclude=frozenset({"backend", "max_steps"}))
def compare(
    request,
    quiet: bool,
    backends: Annotated[str, typer.Option(help="Backends to compare, comma-separated.")] = "nccl,gloo,mpi",
) -> None:
    """Run the same workload on each backend; compare step time, communication, overlap and busbw."""
    from commprof.cli.progress import ConsoleFeedback
    from commprof.cli.sweep import parse_list
    from commprof.commands.compare import compare as command

    console.finish(command(request, parse_list("--backends", backends, str), ConsoleFeedback(quiet)), quiet)
