"""Rich rendering of a Report for the terminal."""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from commprof.render.findings_text import ADVICE_HEADERS, advice_rows, finding_lines, has_findings
from commprof.render.skew_text import SKEW_HEADERS, skew_rows, skew_summary
from commprof.render.tables import (
    BREAKDOWN_HEADERS,
    BREAKDOWN_SUM,
    COLLECTIVE_HEADERS,
    GATHER_HEADERS,
    GATHER_NOTE,
    NOT_SIGNIFICANT,
    PHASE_HEADERS,
    PHASE_NOTE,
    breakdown_notes,
    breakdown_rows,
    collective_row,
    gather_rows,
    headline,
    many_ranks,
    phase_rows,
    step_clock,
    sweep_table,
    without_empty_columns,
)
from commprof.results.report import Report


def rich_table(
    title: str, headers: tuple[str, ...], rows, left: tuple[str, ...] = ("rank",), centre: bool = False
) -> Table:
    """Columns named in `left` align left, the others right (or centred)."""
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, padding=(0, 1, 0, 0), pad_edge=False)
    for header in headers:
        table.add_column(header, justify="left" if header in left else "center" if centre else "right", no_wrap=True)
    for row in rows:
        table.add_row(*(escape(cell) for cell in row))
    return table


def render_sweep(report: Report, console: Console) -> None:
    sweep = report.sweep
    assert sweep is not None, "only for a sweep's report"
    console.print(
        rich_table(
            f"{sweep.kind}: job step time, median of interleaved rounds (ms); speedup vs "
            f"{sweep.baseline}; * best, {NOT_SIGNIFICANT}; exposed comm ms; "
            f"{'gathers = FSDP parameter all-gathers' if sweep.strategy == 'fsdp' else 'AR = all-reduces'}",
            *sweep_table(sweep),
            left=("setting",),
        )
    )
    console.print(f"[bold]{escape(sweep.recommendation)}[/]")
    if sweep.paste:
        console.print(f"  {escape(sweep.paste)}")
    if sweep.kind == "advise":
        console.print(
            rich_table(
                "The findings' settings: predicted against measured gain per step (ms)",
                ADVICE_HEADERS,
                advice_rows(sweep),
                left=("setting", "verdict"),
            )
        )


def show(report: Report, console: Console) -> None:
    run = report.run
    if run:
        console.print(
            f"[bold]{escape(report.name)}[/]: {escape(str(run.model))} ({run.parameters or 0:,} parameters), "
            f"{run.world_size} ranks, {run.backend} on {run.device}"
        )
    else:
        console.print(
            f"[bold]{escape(report.name)}[/]: {len(report.ranks)} rank(s) from {len(report.sources)} trace file(s)"
        )
    if report.incomplete:
        console.print(f"[bold red]INCOMPLETE:[/] {escape(report.incomplete)}")
    if has_findings(report):
        console.print("[bold]Findings[/]")
        for title, evidence, action in finding_lines(report):
            console.print(escape(title))
            if evidence:
                console.print(f"   evidence: {escape(evidence)}")
            if action:
                console.print(f"   do: {escape(action)}")
    if report.sweep is not None:
        render_sweep(report, console)
        console.print(f"Breakdown of the best setting, {escape(report.sweep.best)}:")
    per = "quantiles over ranks, then the slowest ranks" if many_ranks(report) else "per rank"
    console.print(
        rich_table(
            f"Where the step goes, {per} (ms and % of the mean step; {BREAKDOWN_SUM}; all ranks in "
            f"report.json; {step_clock(report)})",
            BREAKDOWN_HEADERS,
            breakdown_rows(report),
        )
    )
    for line in breakdown_notes(report):
        console.print(escape(line))
    if report.phases:
        console.print(rich_table(PHASE_NOTE, PHASE_HEADERS, phase_rows(report), left=("phase",)))
    if report.gathers:
        console.print(rich_table(GATHER_NOTE, GATHER_HEADERS, gather_rows(report), left=("module", "phase")))
    if report.collectives:
        headers, rows = without_empty_columns(COLLECTIVE_HEADERS, [collective_row(c) for c in report.collectives])
        console.print(
            rich_table(
                "Collectives in the profiled steps (algbw, busbw in GB/s)",
                headers,
                rows,
                left=("phase", "op", "for", "backend", "dtype"),
            )
        )
    else:
        console.print("No collective ran in the profiled steps.")
    if report.cross_rank is not None:
        console.print(rich_table("Across ranks (per step)", SKEW_HEADERS, skew_rows(report.cross_rank), left=()))
        console.print(skew_summary(report))
    console.print(
        headline(report) if any(r.comm_ms for r in report.ranks) else "No communication in the profiled steps."
    )
    for skipped in report.skipped:
        console.print(f"[yellow]skipped[/] {escape(skipped.path)}: {escape(skipped.reason)}")
    for warning in report.warnings:
        console.print(f"[yellow]warning[/] {escape(warning)}")
