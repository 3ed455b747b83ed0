"""`commprof analyze`: the same report as `commprof run`, from traces someone else recorded."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer



def analyze(
    paths: Annotated[list[Path], typer.Argument(help="Trace folders or files (.json, .json.gz).", show_default=False)],
    name: Annotated[Optional[str], typer.Option(help="Report folder name [default: the folder or file name].")] = None,
    reports_dir: Annotated[Path, typer.Option(help="Where reports/<name>/ is written.")] = Path("reports"),
    workers: Annotated[Optional[int], typer.Option(help="Parallel processes for parsing [default: all cores].")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Only the report paths.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print the report as JSON on stdout and nothing else there.")] = False,
) -> None:
    """Analyse existing PyTorch profiler traces: compute vs communication, overlap, collectives."""
    from commprof.cli.common import write_and_show
    from commprof.cli.console import set_json_mode
    from commprof.errors import UsageError
    from commprof.pipeline import report_from_traces

    if workers is not None and workers < 1:
        raise UsageError(f"--workers must be >= 1, got {workers}")
    set_json_mode(json_out)
    report_name = name or _default_name(paths[0])
    report, timeline = report_from_traces(paths, name=report_name, kind="analysis", workers=workers)
    write_and_show(report, reports_dir, quiet, timeline=timeline)


def _default_name(path: Path) -> str:
    name = path.resolve().name
    for suffix in (".gz", ".json", ".trace", ".pt"):
        name = name.removesuffix(suffix)
    return name or "analysis"
