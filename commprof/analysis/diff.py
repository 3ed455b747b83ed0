"""Compare two sides, each one report or the reports of several launches of the same job: side-by-side
numbers, deltas, and which deltas are larger than the noise.

With two or more launches a side, each launch is one value (the median over its ranks' profiled steps) and the
interval of the difference of the sides' means is Welch's, so it holds the spread between launches. A delta
counts only then, when that interval excludes zero, the change is at least stats.PRACTICAL_SHARE of the value
before, and it is more than the gap between the two sides' profiler slowdowns. With one launch a side, the
interval is its steps' bootstrap, shown, and no delta is claimed: identical launches differ by more than one
launch's steps show.
"""

from __future__ import annotations

import statistics

from commprof.analysis.stats import difference_ci, launches_difference_ci, real_change
from commprof.errors import UsageError
from commprof.results.diff import DiffResult, DiffRow, SettingChange
from commprof.results.report import Report

METRICS = (
    ("profiled step", "window_ms"),
    ("compute", "compute_ms"),
    ("communication", "comm_ms"),
    ("overlap", "overlap_ms"),
    ("exposed communication", "exposed_comm_ms"),
    ("idle", "idle_ms"),
)


def profiler_slowdown(reports: list[Report]) -> float:
    """How much slower the profiler made the steps it recorded (median over ranks and launches); 0 when the reports
    do not say."""
    found = [report.job_step.slowdown for report in reports if report.job_step]
    return statistics.median(found) if found else 0.0


def side_name(reports: list[Report]) -> str:
    return reports[0].name + (f" and {len(reports) - 1} more" if len(reports) > 1 else "")


def diff_reports(a: list[Report], b: list[Report]) -> DiffResult:
    """Each metric's change with its interval; see the module's docstring for when it counts. A profiler that slowed
    one side's steps 20% more than the other's moves every figure by about that much."""
    for report in (*a, *b):
        if not report.steps:
            raise UsageError(f"report {report.name}: no per-step data to compare")
    names = side_name(a), side_name(b)
    between_launches = len(a) > 1 and len(b) > 1
    slowed = profiler_slowdown(a), profiler_slowdown(b)
    gap = abs(slowed[0] - slowed[1])
    rows = []
    for label, attr in METRICS:
        before, after = ([[getattr(s, attr) for s in r.steps] for r in side] for side in (a, b))
        if between_launches:  # each launch one value, its median step: the launches' spread is the noise
            medians = [statistics.median(launch) for launch in before], [statistics.median(launch) for launch in after]
            base, change = statistics.fmean(medians[0]), launches_difference_ci(*medians)
        else:  # one launch a side: its steps' spread, shown but not tested
            base, change = statistics.median(before[0]), difference_ci(before[0], after[0])
        rows.append(
            DiffRow(
                label,
                base,
                base + change.value,
                change.value,
                100 * change.value / base if base else None,
                change.low,
                change.high,
                between_launches and real_change(change, base, gap),
            )
        )
    first_a, first_b = a[0], b[0]
    return DiffResult(
        names[0],
        names[1],
        rows,
        _settings_changed(first_a, first_b),
        tested=between_launches,
        slowed=list(slowed),
        best=[r.sweep.best if r.sweep else None for r in (first_a, first_b)],
        world_sizes=[r.run.world_size if r.run else None for r in (first_a, first_b)],
    )


def _settings_changed(a: Report, b: Report) -> list[SettingChange]:
    """The settings in which the two runs differ, in the order the first names them (none for traces from
    elsewhere, which carry no settings)."""
    if a.run is None or b.run is None:
        return []
    first, second = a.run.settings(), b.run.settings()
    names = [*first, *(name for name in second if name not in first)]
    return [
        SettingChange(name, first.get(name), second.get(name)) for name in names if first.get(name) != second.get(name)
    ]
