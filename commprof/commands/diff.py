"""`commprof diff A B` (or `A1 A2 vs B1 B2`): two sides side by side, and which differences are beyond the noise."""

from __future__ import annotations

from pathlib import Path

from commprof.analysis.diff import diff_reports
from commprof.commands.outcome import Outcome
from commprof.errors import UsageError
from commprof.results.store import load_report


def diff(a: list[Path], b: list[Path]) -> Outcome:
    left, right = [load_report(p) for p in a], [load_report(p) for p in b]
    same = {(r.name, r.created) for r in left} & {(r.name, r.created) for r in right}
    note = (
        f"the same report on both sides ({', '.join(sorted(name for name, _ in same))}): nothing can differ"
        if same
        else None
    )
    return Outcome(diff_reports(left, right), note=note)


def split_sides(reports: list[Path]) -> tuple[list[Path], list[Path]]:
    """`A B`, or `A1 A2 ... vs B1 B2 ...` (the reports of several launches of each side)."""
    words = [str(p) for p in reports]
    if "vs" not in words:
        if len(reports) != 2:
            raise UsageError(f"diff takes two reports, or several on each side of 'vs'; got {len(reports)}")
        return [reports[0]], [reports[1]]
    at = words.index("vs")
    a, b = reports[:at], reports[at + 1 :]
    if not a or not b or "vs" in words[at + 1 :]:
        raise UsageError("diff: give at least one report on each side of one 'vs' (commprof diff A1 A2 vs B1 B2)")
    return a, b
