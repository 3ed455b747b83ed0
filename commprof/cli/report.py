"""`commprof report`: show a saved result (report.json of any command) without the traces."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from commprof.cli import console
from commprof.cli.options import JsonOpt, QuietOpt

FORMATS = ("table", "md", "json")


def report(
    path: Annotated[
        Path,
        typer.Argument(
            help="A run id (or report name) under reports/, a report.json, or its folder.", show_default=False
        ),
    ],
    format: Annotated[str, typer.Option("--format", "-f", help="table, md or json.")] = "table",
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Show a saved report as a table, Markdown or JSON.

    Any report.json commprof wrote: run, analysis, sweep, tune, scale, bench, compare, backends or diff."""
    from commprof.errors import UsageError
    from commprof.render.outputs import markdown, show
    from commprof.results.report import Report
    from commprof.results.store import load_result

    if format not in FORMATS:
        raise UsageError(f"--format must be one of {', '.join(FORMATS)}, got {format!r}")
    saved = load_result(path)
    if quiet and not json_out and isinstance(saved, Report):
        from commprof.render.tables import headline

        console.out.print(headline(saved) if any(r.comm_ms for r in saved.ranks) else "No communication.", markup=False)
    elif format == "json" or json_out:
        console.out.print_json(saved.to_json())
    elif format == "md":
        console.out.print(markdown(saved), markup=False, soft_wrap=True)
    else:
        show(saved, console.out)
