"""`commprof bench` output: the tables (terminal, Markdown, page), bench.csv and the busbw plot."""

from __future__ import annotations

import dataclasses
from html import escape

from rich.console import Console
from rich.markup import escape as escape_markup

from commprof.render.html import html_image, html_table, page
from commprof.render.markdown import markdown_table
from commprof.render.tables import human_bytes
from commprof.render.terminal import rich_table
from commprof.results.bench import BenchResult, BenchRow

ROW_HEADERS = ("backend", "op", "size", "median us", "p10-p90 us", "algbw GB/s", "busbw GB/s", "ok")
FIT_HEADERS = ("backend", "op", "alpha us", "bandwidth GB/s", "busbw GB/s")
ROWS_TITLE = "Collectives (us; algbw/busbw GB/s; * = a size DDP uses for --model)"
FITS_TITLE = "Latency-bandwidth model t = alpha + size / bandwidth"


def rows(result: BenchResult) -> list[tuple[str, ...]]:
    return [
        (
            r.backend,
            r.op,
            human_bytes(r.bytes) + (" *" if r.ddp_bucket else ""),
            f"{r.median_us:.1f}",
            f"{r.p10_us:.0f}-{r.p90_us:.0f}",
            f"{r.algbw_gbps:.3f}",
            f"{r.busbw_gbps:.3f}",
            "yes" if r.correct else "WRONG",
        )
        for r in result.rows
    ]


def fit_rows(result: BenchResult) -> list[tuple[str, ...]]:
    return [
        (f.backend, f.op, f"{f.alpha_us:.1f}", f"{f.bandwidth_gbps:.3f}", f"{f.busbw_gbps:.3f}") for f in result.fits
    ]


def notes(result: BenchResult) -> list[str]:
    return [f"{backend}: not measured: {reason}" for backend, reason in result.unavailable.items()]


def show(result: BenchResult, console: Console) -> None:
    console.print(rich_table(ROWS_TITLE, ROW_HEADERS, rows(result), left=("backend", "op")))
    console.print(rich_table(FITS_TITLE, FIT_HEADERS, fit_rows(result), left=("backend", "op")))
    for note in notes(result):
        console.print(escape_markup(note))


def markdown(result: BenchResult) -> str:
    lines = [
        f"# commprof bench: {result.name}",
        "",
        f"{result.world_size} ranks.",
        "",
        "![busbw](busbw.png)",
        "",
        f"## {ROWS_TITLE}",
        "",
    ] + markdown_table(ROW_HEADERS, rows(result))
    lines += ["", f"## {FITS_TITLE}", ""] + markdown_table(FIT_HEADERS, fit_rows(result))
    return "\n".join(lines + [""] + [f"- {n}" for n in notes(result)]) + "\n"


def html(result: BenchResult, pngs: dict[str, bytes]) -> str:
    body = [
        f"<h1>commprof bench: {escape(result.name)}</h1>",
        f'<p class="meta">{result.world_size} ranks</p>',
        html_image(pngs, "busbw.png", "bus bandwidth against message size"),
        f"<h2>{escape(ROWS_TITLE)}</h2>",
        html_table(ROW_HEADERS, rows(result)),
        f"<h2>{escape(FITS_TITLE)}</h2>",
        html_table(FIT_HEADERS, fit_rows(result)),
    ]
    body += [f'<p class="note">{escape(n)}</p>' for n in notes(result)]
    return page(f"commprof bench: {result.name}", body)


def images(result: BenchResult) -> dict[str, bytes]:
    from commprof.render.plots import busbw_plot

    return {"busbw.png": busbw_plot(result)} if result.rows else {}


def csv(result: BenchResult) -> str:
    header = [f.name for f in dataclasses.fields(BenchRow)]
    lines = [",".join(header)] + [",".join(str(getattr(r, h)) for h in header) for r in result.rows]
    return "\n".join(lines) + "\n"
