"""`commprof backends` output: the capability matrix, and why each cell failed or was not tried."""

from __future__ import annotations

from html import escape

from rich.console import Console
from rich.markup import escape as escape_markup

from commprof.backends import BACKENDS
from commprof.render.html import html_table, page
from commprof.render.markdown import markdown_table
from commprof.render.terminal import rich_table
from commprof.results.backends import DEVICES, BackendsResult

TITLE = "Capability matrix of this installation (2 ranks; works / fails / - not available here)"


def headers() -> tuple[str, ...]:
    return ("op", *(f"{b} {d.replace('cuda', 'gpu')}" for b in BACKENDS for d in DEVICES))


def _word(cell: list | None) -> str:
    return "-" if cell is None else "works" if cell[0] else "fails"


def rows(result: BackendsResult) -> list[tuple[str, ...]]:
    return [(op, *(_word(result.cell(b, d, op)) for b in BACKENDS for d in DEVICES)) for op in result.ops]


def notes(result: BackendsResult) -> list[str]:
    failed = [
        f"fails: {b} {d} {op}: {cell[1]}"
        for op in result.ops
        for b in BACKENDS
        for d in DEVICES
        if (cell := result.cell(b, d, op)) is not None and not cell[0]
    ]
    return failed + [f"not available here: {key}: {why}" for key, why in result.not_available.items()]


def show(result: BackendsResult, console: Console) -> None:
    console.print(rich_table(TITLE, headers(), rows(result), left=("op",), centre=True))
    for note in notes(result):
        console.print(escape_markup(note))


def markdown(result: BackendsResult) -> str:
    lines = ["# commprof backends", "", TITLE, ""] + markdown_table(headers(), rows(result))
    return "\n".join(lines + [""] + [f"- {n}" for n in notes(result)]) + "\n"


def html(result: BackendsResult, pngs: dict[str, bytes]) -> str:
    body = ["<h1>commprof backends</h1>", f"<p>{escape(TITLE)}</p>", html_table(headers(), rows(result))]
    return page("commprof backends", body + [f'<p class="note">{escape(n)}</p>' for n in notes(result)])


def images(result: BackendsResult) -> dict[str, bytes]:
    return {}
