"""`commprof compare` output: one row per backend (or strategy), the winner, and the step-time plot."""

from __future__ import annotations

from html import escape

from rich.console import Console

from commprof.render.html import html_image, html_table, page
from commprof.render.markdown import markdown_table
from commprof.render.tables import busbw_by_size
from commprof.results.compare import PLURAL, CompareResult


def headers(result: CompareResult) -> tuple[str, ...]:
    return (
        result.compared,
        "step ms (median)",
        "communication ms",
        "exposed ms",
        "overlap ms",
        "peak memory MiB",
        "all-reduce busbw GB/s by size",
    )


def rows(result: CompareResult) -> list[tuple[str, ...]]:
    return [
        (
            r.name,
            f"{r.step_ms:.1f}",
            f"{r.comm_ms:.1f}",
            f"{r.exposed_comm_ms:.1f}",
            f"{r.overlap_ms:.1f}",
            f"{r.peak_memory_mb:.0f}" if r.peak_memory_mb is not None else "-",
            busbw_by_size(r.busbw_by_size),
        )
        if r.available
        else (r.name, f"not run: {r.reason}", "", "", "", "", "")
        for r in result.rows
    ]


def markdown(result: CompareResult) -> str:
    lines = [f"# commprof compare: {result.run_id}", "", f"**{result.summary}**", ""]
    return "\n".join(lines + markdown_table(headers(result), rows(result)) + ["", "![compare](compare.png)", ""])


def show(result: CompareResult, console: Console) -> None:
    console.print(markdown(result), markup=False)


def html(result: CompareResult, pngs: dict[str, bytes]) -> str:
    body = [
        f"<h1>commprof compare: {escape(result.run_id)}</h1>",
        f'<p class="headline">{escape(result.summary)}</p>',
        html_image(pngs, "compare.png", f"{PLURAL[result.compared]} compared"),
        html_table(headers(result), rows(result)),
        f'<p class="meta">Each {result.compared}\'s full report: its folder beside this file.</p>',
    ]
    return page(f"commprof compare: {result.run_id}", body)


def images(result: CompareResult) -> dict[str, bytes]:
    from commprof.render.plots import compare_plot

    return {"compare.png": compare_plot(result.ran())}
