"""`commprof diff` output: each metric of A and B, the change, its 95% CI, and whether it is real."""

from __future__ import annotations

from commprof.render.document import Block, Document, Section, Table, Text, notes_section
from commprof.results.common import signed
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
            signed(r.delta, ".1f"),
            f"{signed(r.delta_pct, '.1f')}%" if r.delta_pct is not None else "-",
            f"{signed(r.low, '.1f')}..{signed(r.high, '.1f')}",
            verdict(result, r.significant),
        )
        for r in result.rows
        if r.significant or not only_real
    ]


def document(result: DiffResult, only_real: bool = False) -> Document:
    blocks: list[Block] = [Text(title(result)), Table(HEADERS, rows(result, only_real), left=("metric",))]
    sections = [Section("", blocks)]
    if result.settings:
        changed: list[tuple[str, ...]] = [(c.name, c.a or "-", c.b or "-") for c in result.settings]
        sections.append(
            Section("Settings that differ", [Table(("setting", "A", "B"), changed, left=("setting", "A", "B"))])
        )
    sections += notes_section(list(result.notes))
    return Document(f"commprof diff: {result.a} vs {result.b}", sections)


def images(result: DiffResult) -> dict[str, bytes]:
    return {}
