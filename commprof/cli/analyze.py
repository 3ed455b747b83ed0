"""`commprof analyze`: the same report as `commprof run`, from traces someone else recorded."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from commprof.cli import console


def analyze(
    paths: Annotated[list[Path], typer.Argument(help="Trace folders or files (.json, .json.gz).", show_default=False)],
    name: Annotated[Optional[str], typer.Option(help="Report folder name [default: the folder or file name].")] = None,
    reports_dir: Annotated[Path, typer.Option(help="Where reports/<name>/ is written.")] = Path("reports"),
    workers: Annotated[Optional[int], typer.Option(help="Parallel processes for parsing [default: all cores].")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Only the report paths.")] = False,
) -> None:
    """Analyse existing PyTorch profiler traces: compute vs communication, overlap, collectives."""
    from commprof.errors import UsageError
    from commprof.pipeline import prepare_report_dir, report_from_traces, write_report
    from commprof.render.terminal import render_terminal

    if workers is not None and workers < 1:
        raise UsageError(f"--workers must be >= 1, got {workers}")
    report_name = name or _default_name(paths[0])
    report = report_from_traces(paths, name=report_name, kind="analysis", workers=workers)
    written = write_report(report, prepare_report_dir(reports_dir, report_name))
    if not quiet:
        render_terminal(report, console.out)
    console.out.print(f"report: {written.json_path}  {written.markdown_path}", markup=False)


def _default_name(path: Path) -> str:
    name = path.resolve().name
    for suffix in (".gz", ".json", ".trace", ".pt"):
        name = name.removesuffix(suffix)
    return name or "analysis"
