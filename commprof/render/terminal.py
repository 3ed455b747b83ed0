"""Rich rendering of a Report for the terminal."""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from commprof.analysis.report import Report
from commprof.render.tables import (BREAKDOWN_HEADERS, COLLECTIVE_HEADERS, SKEW_HEADERS, SWEEP_HEADERS,
                                    breakdown_rows, many_ranks, collective_row, headline, skew_rows, skew_summary, sweep_row)


def _table(title: str, headers: tuple[str, ...], rows, left: tuple[str, ...] = ("rank",)) -> Table:
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, padding=(0, 1, 0, 0), pad_edge=False)
    for header in headers:
        table.add_column(header, justify="left" if header in left else "right", no_wrap=True)
    for row in rows:
        table.add_row(*(escape(cell) for cell in row))
    return table


def render_sweep(report: Report, console: Console) -> None:
    sweep = report.sweep
    console.print(_table(f"{sweep.kind}: job step time, median of interleaved rounds (ms); speedup vs "
                         f"{sweep.baseline}; * best, ~ inside the noise; exposed comm ms; AR = all-reduces",
                         SWEEP_HEADERS, [sweep_row(s) for s in sweep.settings], left=("setting",)))
    console.print(f"[bold]{escape(sweep.recommendation)}[/]")
    if sweep.paste:
        console.print(f"  {escape(sweep.paste)}")


def render_terminal(report: Report, console: Console) -> None:
    run = report.run
    if run:
        console.print(f"[bold]{escape(report.name)}[/]: {escape(str(run.get('model')))} ({run.get('parameters') or 0:,} parameters), "
                      f"{run.get('world_size')} ranks, {run.get('backend')} on {run.get('device')}")
    else:
        console.print(f"[bold]{escape(report.name)}[/]: {len(report.ranks)} rank(s) from {len(report.sources)} trace file(s)")
    if report.incomplete:
        console.print(f"[bold red]INCOMPLETE:[/] {escape(report.incomplete)}")
    if report.sweep is not None:
        render_sweep(report, console)
        console.print(f"Breakdown of the best setting, {escape(report.sweep.best)}:")
    per = "quantiles over ranks, then the slowest ranks" if many_ranks(report) else "per rank"
    table = Table(title=f"Where the step goes, {per} (ms per step and % of the step; all ranks in report.json)",
                  title_justify="left",
                  box=box.SIMPLE_HEAD, padding=(0, 1, 0, 0), pad_edge=False)
    for header in BREAKDOWN_HEADERS:
        table.add_column(header, justify="right" if header != "rank" else "left", no_wrap=True)
    for row in breakdown_rows(report):
        table.add_row(*row)
    console.print(table)
    if report.collectives:
        coll = Table(title="Collectives in the profiled steps (algbw, busbw in GB/s)", title_justify="left",
                     box=box.SIMPLE_HEAD, padding=(0, 1, 0, 0), pad_edge=False)
        for header in COLLECTIVE_HEADERS:
            coll.add_column(header, justify="left" if header in ("op", "backend", "dtype") else "right", no_wrap=True)
        for c in report.collectives:
            coll.add_row(*collective_row(c))
        console.print(coll)
    else:
        console.print("No collective ran in the profiled steps.")
    if report.cross_rank is not None:
        skew = Table(title="Across ranks (per step)", title_justify="left", box=box.SIMPLE_HEAD,
                     padding=(0, 1, 0, 0), pad_edge=False)
        for header in SKEW_HEADERS:
            skew.add_column(header, justify="right", no_wrap=True)
        for row in skew_rows(report.cross_rank):
            skew.add_row(*row)
        console.print(skew)
        console.print(skew_summary(report.cross_rank))
    console.print(headline(report) if any(r.comm_ms for r in report.ranks) else "No communication in the profiled steps.")
    for skipped in report.skipped:
        console.print(f"[yellow]skipped[/] {escape(skipped.path)}: {escape(skipped.reason)}")
    for warning in report.warnings:
        console.print(f"[yellow]warning[/] {escape(warning)}")
