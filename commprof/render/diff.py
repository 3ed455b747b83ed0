"""`commprof diff` output: each metric of A and B, the change, its 95% CI, and whether it is real."""

from __future__ import annotations

from commprof.render.document import Block, Document, Section, Table, Text, notes_section
from commprof.results.common import PRACTICAL_SHARE, signed
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
    sections += notes_section(notes(result))
    return Document(f"commprof diff: {result.a} vs {result.b}", sections)


def notes(result: DiffResult) -> list[str]:
    """What the diff's facts say beside its table: why no change is claimed, the profiler's cost on each side where
    it differs, what else differs between the sides."""
    said = []
    if not result.tested:
        said.append(
            "one launch on a side: its interval holds that launch's steps, not the spread between launches "
            "(identical runs differ by more), so no change is claimed; give each side's reports of two or "
            "more launches (commprof diff A1 A2 vs B1 B2) to test one"
        )
    slowed_a, slowed_b = result.slowed
    gap = abs(slowed_a - slowed_b)
    if gap > PRACTICAL_SHARE:
        said.append(
            f"the profiler slowed {result.a}'s recorded steps {signed(slowed_a, '.0%')} and {result.b}'s "
            f"{signed(slowed_b, '.0%')}: a change counts only beyond that gap, {gap:.0%}"
        )
    best_a, best_b = result.best
    if best_a and best_b and best_a != best_b:
        said.append(f"best setting changed: {best_a} -> {best_b}")
    size_a, size_b = result.world_sizes
    if size_a != size_b:
        said.append(f"world size differs: {size_a} vs {size_b}")
    return said


def images(result: DiffResult) -> dict[str, bytes]:
    return {}
