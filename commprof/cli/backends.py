"""`commprof backends`: the live capability matrix of this installation, every cell tried with 2 ranks."""

from __future__ import annotations

from typing import Annotated

import typer

from commprof.cli import console


def backends(
    json_out: Annotated[
        bool, typer.Option("--json", help="Print the matrix as JSON on stdout and nothing else.")
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress display.")] = False,
    timeout: Annotated[float, typer.Option(help="Seconds allowed for any one op before it counts as failed.")] = 30.0,
) -> None:
    """Try send, recv, broadcast, all_reduce, ... on gloo / mpi / nccl with CPU and GPU tensors, 2 ranks each."""
    from commprof.cli.progress import ConsoleFeedback
    from commprof.commands.backends import backends as command

    console.set_json_mode(json_out)
    outcome = command(timeout, ConsoleFeedback(quiet or json_out))
    console.finish(outcome, quiet=False)  # the matrix is the point, even with --quiet
