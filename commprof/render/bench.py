"""`commprof bench` output: the tables (terminal, Markdown, page), bench.csv and the busbw plot."""

from __future__ import annotations

import dataclasses

from commprof.render.document import Document, Figure, Section, Table, Text, notes_section
from commprof.results.bench import BenchResult, BenchRow
from commprof.values import human_bytes

ROW_HEADERS = ("backend", "op", "size", "median us", "p10-p90 us", "algbw GB/s", "busbw GB/s", "ok")
FIT_HEADERS = ("backend", "op", "alpha us", "bandwidth GB/s", "busbw GB/s")
ROWS_TITLE = "Collectives (us; algbw/busbw GB/s; * = an all-reduce of a bucket's size, as DDP runs for --model)"
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


def where(result: BenchResult) -> str:
    """'2 ranks.' on one host; across hosts, which ranks each holds (the collectives cross the link between them)."""
    by_host: dict[str, list[int]] = {}
    for rank, host in enumerate(result.hosts):
        by_host.setdefault(host, []).append(rank)
    if len(by_host) < 2:
        return f"{result.world_size} ranks."
    held = "; ".join(f"{host}: rank{'s' if len(r) > 1 else ''} {', '.join(map(str, r))}" for host, r in by_host.items())
    return f"{result.world_size} ranks on {len(by_host)} hosts ({held}): the collectives cross the link between them."


def document(result: BenchResult) -> Document:
    sections = [
        Section("", [Text(where(result)), Figure("busbw.png", "bus bandwidth against message size")]),
        Section(ROWS_TITLE, [Table(ROW_HEADERS, rows(result), left=("backend", "op"), key=3)]),
        Section(FITS_TITLE, [Table(FIT_HEADERS, fit_rows(result), left=("backend", "op"), key=2)]),
        *notes_section(notes(result)),
    ]
    return Document(f"commprof bench: {result.name}", sections)


def images(result: BenchResult) -> dict[str, bytes]:
    from commprof.render.plots import busbw_plot

    return {"busbw.png": busbw_plot(result)} if result.rows else {}


def csv(result: BenchResult) -> str:
    header = [f.name for f in dataclasses.fields(BenchRow)]
    lines = [",".join(header)] + [",".join(str(getattr(r, h)) for h in header) for r in result.rows]
    return "\n".join(lines) + "\n"
