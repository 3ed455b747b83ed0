"""`commprof diff A B`: two reports side by side, and which differences are beyond the noise."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from commprof.cli import console


def diff(
    a: Annotated[Path, typer.Argument(help="First report.json (or its folder).", show_default=False)],
    b: Annotated[Path, typer.Argument(help="Second report.json (or its folder).", show_default=False)],
    json_out: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON on stdout, nothing else.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Only the metrics that changed beyond the noise.")] = False,
) -> None:
    """Compare two reports (runs, sweeps or analyses): numbers, deltas, and whether each delta beats the noise."""
    from commprof.commands.diff import diff as command
    from commprof.render import diff as render

    result = command(a, b).result
    if json_out:
        console.out.print_json(result.to_json())
    else:
        render.show(result, console.out, only_real=quiet)
