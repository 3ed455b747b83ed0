"""Compare two reports: side-by-side numbers, deltas, and which deltas are larger than the noise.

The noise of each report is its own step-to-step spread: the per-step values (every rank, every
profiled step) are resampled, and a delta counts when the bootstrap interval of the difference
of medians excludes zero and the change is at least stats.PRACTICAL_SHARE of the value before, and more than the
gap between the two runs' profiler slowdowns.
"""

from __future__ import annotations

import statistics

from commprof.results.diff import DiffResult, DiffRow
from commprof.results.report import Report
from commprof.analysis.stats import difference_ci, real_change
from commprof.results.common import PRACTICAL_SHARE
from commprof.errors import UsageError

METRICS = (("step time", "window_ms"), ("compute", "compute_ms"), ("communication", "comm_ms"),
           ("overlap", "overlap_ms"), ("exposed communication", "exposed_comm_ms"), ("idle", "idle_ms"))


def profiler_slowdown(report: Report) -> float:
    """How much slower the profiler made the steps it recorded (median over ranks); 0 when the report does not say."""
    found = report.profiler_distortion
    return statistics.median(d.slowdown for d in found) if found else 0.0


def diff_reports(a: Report, b: Report) -> DiffResult:
    """Each metric's change with its interval. It counts when the interval excludes 0 and the change is 3% or more,
    and more than the gap between the two runs' profiler slowdowns: both describe profiled steps, and a profiler
    that slowed one run's steps 20% more than the other's moves every figure by about that much."""
    rows, notes = [], []
    for report in (a, b):
        if not report.steps:
            raise UsageError(f"report {report.name} has no per-step data to compare")
    slowed = (profiler_slowdown(a), profiler_slowdown(b))
    gap = abs(slowed[0] - slowed[1])
    for label, attr in METRICS:
        before, after = [getattr(s, attr) for s in a.steps], [getattr(s, attr) for s in b.steps]
        change = difference_ci(before, after)
        base = statistics.median(before)
        rows.append(DiffRow(label, base, statistics.median(after), change.value,
                            100 * change.value / base if base else None, change.low, change.high,
                            len(before) > 1 and len(after) > 1 and real_change(change, base, gap)))
    if gap > PRACTICAL_SHARE:
        notes.append(f"the profiler slowed {a.name}'s recorded steps {slowed[0]:+.0%} and {b.name}'s {slowed[1]:+.0%}: "
                     f"a change counts only beyond that gap, {gap:.0%}")
    if a.sweep and b.sweep and a.sweep.best != b.sweep.best:
        notes.append(f"best setting changed: {a.sweep.best} -> {b.sweep.best}")
    if a.run.get("world_size") != b.run.get("world_size"):
        notes.append(f"world size differs: {a.run.get('world_size')} vs {b.run.get('world_size')}")
    return DiffResult(a.name, b.name, rows, notes)
