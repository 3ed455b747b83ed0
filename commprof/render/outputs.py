"""Every result, of any kind, shown in the terminal and written to its folder the same way."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from commprof.render import html as html_page
from commprof.render import markdown as markdown_page
from commprof.render import terminal
from commprof.render.compare import with_verdict_text
from commprof.render.finding_words import with_words
from commprof.render.notes_text import with_incomplete_words
from commprof.render.tensorboard import write_events
from commprof.render.verdict_words import with_verdict_words
from commprof.render.views import view_of
from commprof.results.bench import BenchResult
from commprof.results.common import Result
from commprof.results.store import save_result

if TYPE_CHECKING:
    from commprof.render.figure_process import FigureProcess


def show(result: Result, console: Console) -> None:
    terminal.show(view_of(result).document(result), console)


def markdown(result: Result) -> str:
    return markdown_page.render(view_of(result).document(result))


def write_result(
    result: Result,
    folder: Path,
    timeline: dict | None = None,
    events_dir: Path | None = None,
    apart: FigureProcess | None = None,
) -> list[Path]:
    """report.json, the plots, report.md (which shows them) and the self-contained report.html; for a run,
    timeline.json (the job's aligned trace) when given; for bench, bench.csv; TensorBoard event files in
    `events_dir` (next to the traces) or else folder/tensorboard. The page comes first. `apart`: a process
    that draws the plots and writes the event files while this one writes the rest; else this one does."""
    view = view_of(result)
    logdir = events_dir or folder / "tensorboard"
    if apart is not None:
        drawn, events_written = apart.draw(result), apart.write_events(result, logdir)
    else:
        drawn, events_written = (lambda: view.images(result)), (lambda: write_events(result, logdir))
    document = view.document(result)
    texts = {"report.md": markdown_page.render(document)}
    if timeline is not None:
        texts["timeline.json"] = json.dumps(timeline)
    if isinstance(result, BenchResult):
        texts["bench.csv"] = view.csv(result)
    save_result(said(result), folder)
    for name, text in texts.items():
        (folder / name).write_text(text)
    images, events = drawn(), events_written()
    for name, png in images.items():
        (folder / name).write_bytes(png)
    (folder / "report.html").write_text(html_page.render(document, images))
    names = ["report.html", "report.json", "report.md", *images, *(n for n in texts if not n.startswith("report."))]
    return [folder / name for name in names] + ([events] if events is not None else [])


def said(result: Result) -> Result:
    """The result with the words of its facts beside them, for report.json's readers: its findings', its sweep's
    verdict, an unfinished run's, a comparison's verdict (render/ makes each; the facts stay what is read back)."""
    return with_verdict_text(with_incomplete_words(with_verdict_words(with_words(result))))
