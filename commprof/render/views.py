"""Which render module draws which kind of result."""

from __future__ import annotations

from types import ModuleType

from commprof.results.backends import BackendsResult
from commprof.results.bench import BenchResult
from commprof.results.common import Result
from commprof.results.compare import CompareResult
from commprof.results.diff import DiffResult
from commprof.results.report import Report
from commprof.results.scale import ScaleReport


def view_of(result: Result) -> ModuleType:
    """The render module of this kind: document(result), the sections every renderer shows, and images(result)."""
    from commprof.render import backends, bench, compare, diff, report_view, scale

    views = {
        Report: report_view,
        ScaleReport: scale,
        BenchResult: bench,
        CompareResult: compare,
        BackendsResult: backends,
        DiffResult: diff,
    }
    return views[type(result)]
