"""`commprof diff A B`: two reports side by side, and which differences are beyond the noise."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Annotated

import typer

from commprof.cli import console

HEADERS = ("metric", "A", "B", "B-A", "change", "95% CI of B-A", "real?")


def diff(
    a: Annotated[Path, typer.Argument(help="First report.json (or its folder).", show_default=False)],
    b: Annotated[Path, typer.Argument(help="Second report.json (or its folder).", show_default=False)],
    json_out: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON on stdout, nothing else.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Only the metrics that changed beyond the noise.")] = False,
) -> None:
    """Compare two reports (runs, sweeps or analyses): numbers, deltas, and whether each delta beats the noise."""
    from rich import box
    from rich.table import Table

    from commprof.analysis.diff import diff_reports
    from commprof.analysis.report import load_report

    result = diff_reports(*(load_report(p / "report.json" if p.is_dir() else p) for p in (a, b)))
    if json_out:
        console.out.print_json(json.dumps(dataclasses.asdict(result)))
        return
    rows = [r for r in result.rows if r.significant or not quiet]
    table = Table(title=f"A = {result.a}, B = {result.b}: median ms per step; real? = beyond the noise of both runs",
                  title_justify="left", box=box.SIMPLE_HEAD, padding=(0, 1, 0, 0), pad_edge=False)
    for header in HEADERS:
        table.add_column(header, justify="left" if header.startswith("metric") else "right", no_wrap=True)
    for r in rows:
        change = f"{r.delta_pct:+.1f}%" if r.delta_pct is not None else "-"
        table.add_row(r.metric, f"{r.a:.1f}", f"{r.b:.1f}", f"{r.delta:+.1f}", change, f"{r.low:+.1f}..{r.high:+.1f}",
                      "yes" if r.significant else "noise")
    console.out.print(table)
    for note in result.notes:
        console.out.print(f"note: {note}", markup=False)
