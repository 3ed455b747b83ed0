"""`commprof analyze`: the same report as `commprof run`, from traces someone else recorded."""

from __future__ import annotations

from pathlib import Path

from commprof.commands.outcome import Outcome
from commprof.commands.reporting import report_from_traces, write_report
from commprof.errors import UsageError


def analyze(paths: list[Path], name: str | None = None, reports_dir: Path = Path("reports"),
            workers: int | None = None, windows: str = "steps") -> Outcome:
    if workers is not None and workers < 1:
        raise UsageError(f"--workers must be >= 1, got {workers}")
    report, timeline = report_from_traces(paths, name=name or default_name(paths[0]), kind="analysis",
                                          workers=workers, windows=windows, bench_dir=reports_dir)
    return Outcome(report, write_report(report, reports_dir, report.name, timeline))


def default_name(path: Path) -> str:
    name = path.resolve().name
    for suffix in (".gz", ".json", ".trace", ".pt"):
        name = name.removesuffix(suffix)
    return name or "analysis"
