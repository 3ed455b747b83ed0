"""`commprof backends`: the live capability matrix of this installation, every cell tried with 2 ranks."""

from __future__ import annotations

from typing import Annotated

import typer

from commprof.cli import console
from commprof.cli.options import JsonOpt, QuietOpt


def backends(
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
    timeout: Annotated[float, typer.Option(help="Seconds allowed for any one op before it counts as failed.")] = 30.0,
) -> None:
    """Show which collectives work on this installation.

    Tries send, recv, broadcast, all_reduce and the other collectives on gloo, mpi and nccl with CPU and GPU
    tensors, 2 ranks each."""
    from commprof.cli.progress import ConsoleFeedback
    from commprof.commands.backends import backends as command

    outcome = command(timeout, ConsoleFeedback(quiet or json_out))
    console.finish(outcome, quiet=False, json_out=json_out)  # the matrix is its one answer, even with --quiet
