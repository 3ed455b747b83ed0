"""Compare two reports: side-by-side numbers, deltas, and which deltas are larger than the noise.

The noise of each report is its own step-to-step spread: the per-step values (every rank, every
profiled step) are resampled, and a delta counts when the bootstrap interval of the difference
of medians excludes zero and the change is at least stats.PRACTICAL_SHARE of the value before.
"""

from __future__ import annotations

import statistics

from commprof.results.diff import DiffResult, DiffRow
from commprof.results.report import Report
from commprof.analysis.stats import difference_ci, real_change
from commprof.errors import UsageError

METRICS = (("step time", "window_ms"), ("compute", "compute_ms"), ("communication", "comm_ms"),
           ("overlap", "overlap_ms"), ("exposed communication", "exposed_comm_ms"), ("idle", "idle_ms"))


def diff_reports(a: Report, b: Report) -> DiffResult:
    rows, notes = [], []
    for report in (a, b):
        if not report.steps:
            raise UsageError(f"report {report.name} has no per-step data to compare")
    for label, attr in METRICS:
        before, after = [getattr(s, attr) for s in a.steps], [getattr(s, attr) for s in b.steps]
        change = difference_ci(before, after)
        base = statistics.median(before)
        rows.append(DiffRow(label, base, statistics.median(after), change.value,
                            100 * change.value / base if base else None, change.low, change.high,
                            len(before) > 1 and len(after) > 1 and real_change(change, base)))
    if a.sweep and b.sweep and a.sweep.best != b.sweep.best:
        notes.append(f"best setting changed: {a.sweep.best} -> {b.sweep.best}")
    if a.run.get("world_size") != b.run.get("world_size"):
        notes.append(f"world size differs: {a.run.get('world_size')} vs {b.run.get('world_size')}")
    return DiffResult(a.name, b.name, rows, notes)
