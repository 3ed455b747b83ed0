"""`commprof diff` output: each metric of A and B, the change, its 95% CI, and whether it is real."""

from __future__ import annotations

from html import escape

from rich.console import Console
from rich.markup import escape as escape_markup

from commprof.render.html import html_table, page
from commprof.render.markdown import markdown_table
from commprof.render.terminal import rich_table
from commprof.results.diff import DiffResult

HEADERS = ("metric", "A", "B", "B-A", "change", "95% CI of B-A", "real?")


def title(result: DiffResult) -> str:
    return (
        f"A = {result.a}, B = {result.b}: median ms per step; real? = beyond the spread between launches and "
        "steps of both sides, 3% and any gap between their profilers' slowdowns"
    )


def verdict(result: DiffResult, significant: bool) -> str:
    if not result.tested:
        return "untested"
    return "yes" if significant else "noise"


def rows(result: DiffResult, only_real: bool = False) -> list[tuple[str, ...]]:
    return [
        (
            r.metric,
            f"{r.a:.1f}",
            f"{r.b:.1f}",
            f"{r.delta:+.1f}",
            f"{r.delta_pct:+.1f}%" if r.delta_pct is not None else "-",
            f"{r.low:+.1f}..{r.high:+.1f}",
            verdict(result, r.significant),
        )
        for r in result.rows
        if r.significant or not only_real
    ]


def show(result: DiffResult, console: Console, only_real: bool = False) -> None:
    console.print(rich_table(title(result), HEADERS, rows(result, only_real), left=("metric",)))
    for note in result.notes:
        console.print(f"note: {escape_markup(note)}")


def markdown(result: DiffResult) -> str:
    lines = [f"# commprof diff: {result.a} vs {result.b}", "", title(result), ""] + markdown_table(
        HEADERS, rows(result)
    )
    return "\n".join(lines + [""] + [f"- note: {n}" for n in result.notes]) + "\n"


def html(result: DiffResult, pngs: dict[str, bytes]) -> str:
    body = [
        f"<h1>commprof diff: {escape(result.a)} vs {escape(result.b)}</h1>",
        f"<p>{escape(title(result))}</p>",
        html_table(HEADERS, rows(result)),
    ]
    notes = [f'<p class="note">{escape(n)}</p>' for n in result.notes]
    return page(f"commprof diff: {result.a} vs {result.b}", body + notes)


def images(result: DiffResult) -> dict[str, bytes]:
    return {}
