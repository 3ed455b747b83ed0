"""Every result, of any kind, shown in the terminal and written to its folder the same way."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

from rich.console import Console

from commprof.results.backends import BackendsResult
from commprof.results.bench import BenchResult
from commprof.results.common import Result
from commprof.results.compare import CompareResult
from commprof.results.diff import DiffResult
from commprof.results.report import Report
from commprof.results.scale import ScaleReport
from commprof.results.store import save_result


def _view(result: Result) -> ModuleType:
    """The render module of this kind: show(result, console), markdown(result), html(result, images), images(result)."""
    from commprof.render import backends, bench, compare, diff, report_view, scale

    views = {Report: report_view, ScaleReport: scale, BenchResult: bench, CompareResult: compare,
             BackendsResult: backends, DiffResult: diff}
    return views[type(result)]


def show(result: Result, console: Console) -> None:
    _view(result).show(result, console)


def markdown(result: Result) -> str:
    return _view(result).markdown(result)


def write_result(result: Result, folder: Path, timeline: dict | None = None) -> list[Path]:
    """report.json, the plots, report.md (which shows them) and the self-contained report.html; for a run,
    timeline.json (the job's aligned trace) when given; for bench, bench.csv. The page comes first."""
    view = _view(result)
    written = [folder / "report.html", save_result(result, folder)]
    images = view.images(result)
    for name, png in images.items():
        (folder / name).write_bytes(png)
        written.append(folder / name)
    (folder / "report.md").write_text(view.markdown(result))
    (folder / "report.html").write_text(view.html(result, images))
    written.insert(2, folder / "report.md")
    if timeline is not None:
        (folder / "timeline.json").write_text(json.dumps(timeline))
        written.append(folder / "timeline.json")
    if isinstance(result, BenchResult):
        (folder / "bench.csv").write_text(view.csv(result))
        written.append(folder / "bench.csv")
    return written
