"""`commprof report`: re-render a saved report.json without the traces."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from commprof.cli import console

FORMATS = ("table", "md", "json")


def report(
    path: Annotated[Path, typer.Argument(help="A report.json written by commprof, or its folder.", show_default=False)],
    format: Annotated[str, typer.Option("--format", "-f", help="table, md or json.")] = "table",
    json_out: Annotated[bool, typer.Option("--json", help="Same as --format json.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Only the headline sentence.")] = False,
) -> None:
    """Show a saved report as a table, Markdown or JSON."""
    from commprof.analysis.report import load_report
    from commprof.errors import UsageError
    from commprof.render.markdown import render_markdown
    from commprof.render.terminal import render_terminal

    if format not in FORMATS:
        raise UsageError(f"--format must be one of {', '.join(FORMATS)}, got {format!r}")
    saved = load_report(path / "report.json" if path.is_dir() else path)
    if quiet and not json_out:
        from commprof.render.tables import headline

        console.out.print(headline(saved) if any(r.comm_ms for r in saved.ranks) else "No communication.", markup=False)
        return
    if format == "json" or json_out:
        console.out.print_json(saved.to_json())
    elif format == "md":
        console.out.print(render_markdown(saved), markup=False, soft_wrap=True)
    else:
        render_terminal(saved, console.out)
