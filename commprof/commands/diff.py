"""`commprof diff A B`: two reports side by side, and which differences are beyond the noise."""

from __future__ import annotations

from pathlib import Path

from commprof.analysis.diff import diff_reports
from commprof.commands.outcome import Outcome
from commprof.results.store import load_report


def diff(a: Path, b: Path) -> Outcome:
    return Outcome(diff_reports(load_report(a), load_report(b)))
