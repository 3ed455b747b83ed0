"""`commprof diff A B` or `commprof diff A1 A2 vs B1 B2`: two sides, and which differences are beyond the noise."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from commprof.cli import console
from commprof.cli.options import JsonOpt, QuietOpt


def diff(
    reports: Annotated[
        list[Path],
        typer.Argument(
            help="Two reports, each a run id under reports/, a report.json or its folder: A B. To test a change, "
            "the reports of two or more launches "
            "of each side, split by 'vs': A1 A2 vs B1 B2.",
            show_default=False,
        ),
    ],
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Compare two reports: deltas, and which of them beat the noise.

    Runs, sweeps or analyses: numbers, deltas, and whether each delta beats the noise. A delta is tested only
    with two or more launches on each side: one launch cannot show the spread between launches."""
    from commprof.commands.diff import diff as command
    from commprof.commands.diff import split_sides
    from commprof.render import diff as render
    from commprof.render import terminal
    from commprof.results.diff import DiffResult

    outcome = command(*split_sides(reports))
    result = outcome.result
    assert isinstance(result, DiffResult)  # what commands.diff always returns
    if outcome.note:
        console.info(outcome.note)
    if json_out:
        console.out.print_json(result.to_json())
    else:
        terminal.show(render.document(result, only_real=quiet), console.out)
