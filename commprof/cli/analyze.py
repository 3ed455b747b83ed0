"""`commprof analyze`: the same report as `commprof run`, from traces someone else recorded."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from commprof.cli import console
from commprof.cli.options import JsonOpt, QuietOpt, ReportsDirOpt


class Windows(str, Enum):
    steps = "steps"
    hta = "hta"


def analyze(
    paths: Annotated[list[Path], typer.Argument(help="Trace folders or files (.json, .json.gz).", show_default=False)],
    name: Annotated[
        Optional[str],
        typer.Option(
            help="The report folder's name; one that exists is an error, never overwritten [default: the folder's "
            "name, or the file's without .json and .gz (foo.json: foo); when a report has that name already (the "
            "run's own), NAME-analysis, then NAME-analysis-2, -3, ...].",
        ),
    ] = None,
    reports_dir: ReportsDirOpt = Path("reports"),
    workers: Annotated[
        Optional[int],
        typer.Option(
            help="Parallel processes for parsing (1: everything in this process, the figures too) [default: all cores]."
        ),
    ] = None,
    windows: Annotated[
        Windows,
        typer.Option(
            help="steps: one window per profiler step (the device's steps on GPU traces). hta: Holistic Trace "
            "Analysis's one window per GPU rank, only the device work launched before the last step, for "
            "comparing with HTA."
        ),
    ] = Windows.steps,
    cluster: Annotated[
        Optional[str],
        typer.Option(
            help="Address of a running Dask scheduler (tcp://HOST:8786): each trace is loaded and digested on its "
            "workers, which must see the same paths (a shared file system); the report is made here. Needs "
            "pip install 'commprof[cluster]'.",
            show_default=False,
        ),
    ] = None,
    quiet: QuietOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Analyse existing PyTorch profiler traces.

    The report of commprof run (compute against communication, overlap, collectives, findings), from traces
    commprof did not record or recorded earlier. It goes to a new folder named after the traces (see --name):
    after `commprof run --run-id exp1`, `commprof analyze traces/exp1` writes reports/exp1-analysis/, since
    reports/exp1/ is the run's own report. The last line printed says where it went."""
    from commprof.cli.progress import ConsoleFeedback
    from commprof.commands.analyze import analyze as command

    feedback = ConsoleFeedback(quiet or json_out)
    console.finish(
        command(paths, name, reports_dir, workers, windows.value, cluster, feedback, figures_apart=True),
        quiet,
        json_out,
    )
