"""`commprof compare` output: one row per backend, the winner, and the step-time plot."""

from __future__ import annotations

from html import escape

from rich.console import Console

from commprof.render.html import html_image, html_table, page
from commprof.render.markdown import markdown_table
from commprof.render.tables import busbw_by_size
from commprof.results.compare import CompareResult

HEADERS = ("backend", "step ms (median)", "communication ms", "exposed ms", "overlap ms",
           "all-reduce busbw GB/s by size")


def rows(result: CompareResult) -> list[tuple[str, ...]]:
    return [(r.backend, f"{r.step_ms:.1f}", f"{r.comm_ms:.1f}", f"{r.exposed_comm_ms:.1f}", f"{r.overlap_ms:.1f}",
             busbw_by_size(r.busbw_by_size)) if r.available else (r.backend, f"not run: {r.reason}", "", "", "", "")
            for r in result.rows]


def markdown(result: CompareResult) -> str:
    lines = [f"# commprof compare: {result.run_id}", "", f"**{result.summary}**", ""]
    return "\n".join(lines + markdown_table(HEADERS, rows(result)) + ["", "![compare](compare.png)", ""])


def show(result: CompareResult, console: Console) -> None:
    console.print(markdown(result), markup=False)


def html(result: CompareResult, pngs: dict[str, bytes]) -> str:
    body = [f"<h1>commprof compare: {escape(result.run_id)}</h1>", f'<p class="headline">{escape(result.summary)}</p>',
            html_image(pngs, "compare.png", "backends compared"), html_table(HEADERS, rows(result)),
            '<p class="meta">Each backend\'s full report: its folder beside this file.</p>']
    return page(f"commprof compare: {result.run_id}", body)


def images(result: CompareResult) -> dict[str, bytes]:
    from commprof.render.plots import compare_plot

    return {"compare.png": compare_plot(result.ran())}
