"""`commprof compare`: the same workload, seed and settings on each backend, side by side."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Optional

import typer

from commprof.cli import console
from commprof.cli.options import FSDP_OPTIONS, SCRIPT_KIND_OPTIONS, script_argument, with_run_options


@with_run_options(exclude=frozenset({"backend", "script_output"}) | FSDP_OPTIONS | SCRIPT_KIND_OPTIONS)
def compare(
    request,
    quiet: bool,
    json_out: bool,
    script: Annotated[
        Optional[list[str]],
        script_argument(
            "run unmodified on each backend, its init_process_group given that backend in place of its own "
            "(--max-steps ends each launch)."
        ),
    ] = None,
    backends: Annotated[str, typer.Option(help="Backends to compare, comma-separated.")] = "nccl,gloo,mpi",
    strategies: Annotated[
        Optional[str],
        typer.Option(
            help="Compare strategies instead, on one backend: ddp,fsdp (the same model with DDP and with FSDP2).",
            show_default=False,
        ),
    ] = None,
    repeats: Annotated[
        int,
        typer.Option(
            help="Interleaved launches of each backend (or strategy), then more while the winner is undecided, up to "
            "twice as many: the winner is claimed over the spread between launches (1: one launch each, its steps' "
            "interval widened for a rerun)."
        ),
    ] = 3,
) -> None:
    """Compare backends (or DDP against FSDP) on the same workload.

    Runs it (a built-in model, or your script after --) on each backend (or strategy) and compares step time,
    communication, overlap, peak memory and busbw."""
    from commprof.cli.progress import ConsoleFeedback
    from commprof.commands.compare import compare as command
    from commprof.values import parse_list

    chosen = parse_list("--strategies", strategies, str) if strategies else None
    request = dataclasses.replace(request, script=tuple(script or ()))
    console.finish(
        command(request, parse_list("--backends", backends, str), ConsoleFeedback(quiet), chosen, repeats),
        quiet,
        json_out,
    )
