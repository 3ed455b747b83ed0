"""`commprof analyze`: the same report as `commprof run`, from traces someone else recorded."""

from __future__ import annotations

import os
import socket
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from commprof.commands.outcome import SILENT, Feedback, Outcome
from commprof.commands.reporting import free_report_name, report_from_traces, write_report
from commprof.errors import RunFailed, UsageError
from commprof.results.store import check_writable
from commprof.trace.files import find_trace_files

HOW_TO_GET_DASK = "install Dask with: pip install 'commprof[cluster]'"
FIGURES_APART_ABOVE_BYTES = 16 << 20  # smaller traces are analysed in less time than matplotlib takes to import
EARLY_HEADLINE_FILES = 64  # from this many ranks' trace files on, the headline is said before the report is written


def analyze(
    paths: list[Path],
    name: str | None = None,
    reports_dir: Path = Path("reports"),
    workers: int | None = None,
    windows: str = "steps",
    cluster: str | None = None,
    feedback: Feedback = SILENT,
    figures_apart: bool = False,
) -> Outcome:
    """`cluster`: the address of a running Dask scheduler; each rank's trace is loaded and digested there, on
    workers that must see the same paths, and the report is reduced here, as without it. `figures_apart`:
    for traces over 16 MB (uncompressed), the plots are drawn and the TensorBoard files written in a process
    started now, beside the analysis (render.figure_process), unless `workers` is 1."""
    if workers is not None and workers < 1:
        raise UsageError(f"--workers must be >= 1, got {workers}")
    check_writable(reports_dir)  # before the analysis, which may take long
    name, note = (name, None) if name else _default_name(paths, reports_dir)
    with _figure_process(figures_apart and workers != 1 and big_traces(paths)) as apart:
        with _executor(cluster) as executor, feedback.counter("analysing trace files") as progress:
            report, timeline = report_from_traces(
                paths,
                name=name,
                kind="analysis",
                workers=workers,
                windows=windows,
                bench_dir=reports_dir,
                executor=executor,
                progress=progress,
            )
        if len(report.sources) >= EARLY_HEADLINE_FILES:
            from commprof.render.tables import headline

            feedback.info(f"{headline(report)} (writing the report)")
        return Outcome(report, write_report(report, reports_dir, report.name, timeline, apart=apart), note=note)


@contextmanager
def _figure_process(wanted: bool) -> Iterator:
    if not wanted:
        yield None
        return
    from commprof.render.figure_process import FigureProcess

    process = FigureProcess()
    try:
        yield process
    finally:
        process.close()


@contextmanager
def _executor(cluster: str | None) -> Iterator:
    if cluster is None:
        yield None
        return
    try:
        from distributed import Client
    except ImportError:
        raise UsageError(f"--cluster needs Dask's distributed package; {HOW_TO_GET_DASK}") from None
    _fail_fast_if_refused(cluster)
    try:
        client = Client(cluster, timeout="20s")
    except (OSError, TimeoutError) as exc:
        raise RunFailed(f"--cluster {cluster}: no Dask scheduler answered ({exc})") from None
    try:
        yield client.get_executor()
    finally:
        client.close()


def _fail_fast_if_refused(cluster: str) -> None:
    """A TCP address where nothing listens is said at once: Dask's client would retry it for its whole timeout.
    A scheduler still starting is refused too (start it first); an address that drops the connection, or a host
    that does not resolve, is left to Dask."""
    from distributed.comm.addressing import parse_address, parse_host_port

    try:
        scheme, location = parse_address(cluster)
        host, port = parse_host_port(location)
    except ValueError:
        return  # Dask says what is wrong with it
    if scheme != "tcp":
        return
    try:
        socket.create_connection((host, port), timeout=5).close()
    except ConnectionRefusedError as exc:
        raise RunFailed(f"--cluster {cluster}: no Dask scheduler answered (nothing listens there: {exc})") from None
    except OSError:
        return  # unreachable or slow: Dask's own timeout decides


def big_traces(paths: list[Path]) -> bool:
    """Whether the traces hold more than FIGURES_APART_ABOVE_BYTES, gzip's uncompressed (stops as soon as they
    do)."""
    from commprof.trace.stream import uncompressed_size

    total = 0
    try:
        for file in find_trace_files(paths):
            total += uncompressed_size(file)
            if total > FIGURES_APART_ABOVE_BYTES:
                return True
    except (OSError, UsageError):
        pass  # the analysis says what is wrong with them
    return False


def default_name(paths: list[Path]) -> str:
    """What the traces are called: a folder's name (a run's: its run id), a file's without its suffixes
    (foo.json.gz: foo), and the folder of several files that share one (traces/r1/rank*.json: r1). The path as
    given, not where a link points."""
    first = Path(os.path.abspath(paths[0]))  # `.` and `..` made names; links kept
    parents = {Path(os.path.abspath(p)).parent for p in paths}
    if len(paths) > 1 and len(parents) == 1 and all(p.is_file() for p in paths):
        first = parents.pop()
    name = first.name
    for suffix in (".gz", ".json", ".trace", ".pt"):
        name = name.removesuffix(suffix)
    return name or "analysis"


def _default_name(paths: list[Path], reports_dir: Path) -> tuple[str, str | None]:
    """The traces' name (default_name) while reports_dir has no report of that name (commprof never overwrites
    one), else NAME-analysis, NAME-analysis-2, ...; and then a note that says where the report goes."""
    base = default_name(paths)
    name = free_report_name(reports_dir, base, f"{base}-analysis")
    if name == base:
        return name, None
    return (
        name,
        f"{reports_dir / base} already exists, so this analysis goes to {reports_dir / name}/ (--name NAME to choose)",
    )
