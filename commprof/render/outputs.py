"""Every result, of any kind, shown in the terminal and written to its folder the same way."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Callable

from rich.console import Console

from commprof.results.backends import BackendsResult
from commprof.results.bench import BenchResult
from commprof.results.common import Result
from commprof.results.compare import CompareResult
from commprof.results.diff import DiffResult
from commprof.results.report import Report
from commprof.results.scale import ScaleReport
from commprof.results.store import save_result
from commprof.render.tensorboard import write_events


def view_of(result: Result) -> ModuleType:
    """The render module of this kind: show(result, console), markdown(result), html(result, images), images(result)."""
    from commprof.render import backends, bench, compare, diff, report_view, scale

    views = {Report: report_view, ScaleReport: scale, BenchResult: bench, CompareResult: compare,
             BackendsResult: backends, DiffResult: diff}
    return views[type(result)]


def show(result: Result, console: Console) -> None:
    view_of(result).show(result, console)


def markdown(result: Result) -> str:
    return view_of(result).markdown(result)


def write_result(result: Result, folder: Path, timeline: dict | None = None, events_dir: Path | None = None,
                 figures: Callable[[Result], dict[str, bytes]] | None = None) -> list[Path]:
    """report.json, the plots, report.md (which shows them) and the self-contained report.html; for a run,
    timeline.json (the job's aligned trace) when given; for bench, bench.csv; TensorBoard event files in
    `events_dir` (next to the traces) or else folder/tensorboard. The page comes first. `figures`: who
    draws the plots (figure_process.FigureProcess.images), else this process."""
    view = view_of(result)
    images = (figures or view.images)(result)
    texts = {"report.md": view.markdown(result), "report.html": view.html(result, images)}
    if timeline is not None:
        texts["timeline.json"] = json.dumps(timeline)
    if isinstance(result, BenchResult):
        texts["bench.csv"] = view.csv(result)
    save_result(result, folder)
    for name, png in images.items():
        (folder / name).write_bytes(png)
    for name, text in texts.items():
        (folder / name).write_text(text)
    events = write_events(result, events_dir or folder / "tensorboard")
    names = ["report.html", "report.json", "report.md", *images, *(n for n in texts if not n.startswith("report."))]
    return [folder / name for name in names] + ([events] if events is not None else [])
