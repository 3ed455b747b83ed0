"""Traces -> Report -> files: load, analyse and write, shared by every command that reports on traces."""

from __future__ import annotations

import dataclasses
import itertools
import json
from concurrent.futures import Executor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from commprof.analysis.analyze import analyze_run, finished_report
from commprof.analysis.collectives import with_zero_purposes
from commprof.analysis.crossrank import measured_offsets
from commprof.analysis.digest import MAX_DETAILED_RANKS, digest, digest_hta, with_digests_from_other_nodes
from commprof.analysis.incomplete import completed_steps_only
from commprof.analysis.models import model_accounts
from commprof.analysis.network import network_of
from commprof.analysis.sweep import sweep_result
from commprof.analysis.timeline import job_timeline
from commprof.errors import NothingToReport, UsageError, why_not_written
from commprof.launch.runlog import read_run_json
from commprof.render.notes_text import unfinished_text
from commprof.results.common import Estimate, Result
from commprof.results.finding_facts import LinkSource
from commprof.results.job import BuiltDeepSpeed, Job
from commprof.results.report import Report
from commprof.results.run_record import RunSummary
from commprof.results.step_ledger import read_ledgers
from commprof.results.sweep_record import SweepRecord
from commprof.trace.load import load_run, load_run_with
from commprof.trace.model import RankTrace, RunTrace

if TYPE_CHECKING:
    from commprof.render.figure_process import FigureProcess


def report_from_traces(
    paths: list[Path],
    name: str,
    kind: str,
    workers: int | None = None,
    windows: str = "steps",
    bench_dir: Path | None = None,
    executor: Executor | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[Report, dict]:
    """The report, and the job's aligned Chrome-trace timeline (timeline.json). windows="hta": HTA's one window
    per GPU rank instead of the steps (analysis.whole_trace). `executor`: where each rank is loaded and digested
    (a Dask cluster's); `progress(done, total)` as files are."""
    report, _, timeline = _analyse(
        paths, name, kind, workers, digest_hta if windows == "hta" else digest, bench_dir, executor, progress
    )
    if windows == "hta":
        report = dataclasses.replace(report, warnings=[*report.warnings, HTA_NOTE])
    return report, timeline


HTA_NOTE = (
    "windows as Holistic Trace Analysis draws them: one per GPU rank, first to last device work launched "
    "before the last profiler step (memcpy/memset as 'copies'); CPU ranks keep their steps"
)


def report_and_trace(run_dir: Path, name: str) -> tuple[Report, RunTrace, dict]:
    """A run's report, the loaded traces it came from, and its timeline."""
    return _analyse([run_dir], name, "run", None, digest)


def _analyse(
    paths: list[Path],
    name: str,
    kind: str,
    workers: int | None,
    prepare: Callable[[RankTrace], tuple[RankTrace, Any]],
    bench_dir: Path | None = None,
    executor: Executor | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[Report, RunTrace, dict]:
    """`bench_dir`: where to look for a `commprof bench` of the traces' host, the all-reduce ceiling of the
    findings."""
    meta = read_run_json(paths[0]) if len(paths) == 1 and paths[0].is_dir() else None  # None: not commprof's run
    run = meta.summary() if meta else None
    loaded, breakdowns = load_run_with(paths, workers, prepare, executor, progress)
    if meta and prepare is digest:  # a multi-node run's ranks whose traces stayed on their nodes
        loaded, breakdowns = with_digests_from_other_nodes(loaded, breakdowns, paths[0])
    trace, unfinished = completed_steps_only(loaded, run)
    if not trace.ranks:
        raise NothingToReport(f"{paths[0]}: {unfinished_text(unfinished)}; nothing to report")
    analysis = analyze_run(trace, name, kind, run, measured_offsets(run, trace), breakdowns)
    # timeline.json: the first ranks (those digest keeps intervals for); report.json has every rank
    timeline = job_timeline(analysis.windows[:MAX_DETAILED_RANKS], analysis.matching)
    hosts = {r.host for r in trace.ranks if r.host} or set(run.hosts if run else [])
    ceiling = bench_ceiling(bench_dir, hosts, trace.ranks[0].backend) if bench_dir else None
    ledgers = read_ledgers(paths[0]) if meta else {}
    return finished_report(analysis, meta, unfinished, ceiling, ledgers), trace, timeline


def bench_ceiling(reports_dir: Path, hosts: set[str], backend: str | None) -> tuple[float, LinkSource] | None:
    """The all-reduce bus bandwidth the newest `commprof bench` on these hosts (the same hosts, no others)
    measured for this backend (large messages), and which bench: (GB/s, its source); None without one."""
    found = []
    for marker in reports_dir.glob("*/bench.csv"):  # only bench folders have it: no other report.json is read
        try:
            data = json.loads((marker.parent / "report.json").read_text())
        except (OSError, ValueError):
            continue
        if data.get("kind") != "bench" or not hosts or set(data.get("hosts") or [data.get("host")]) != hosts:
            continue
        found += [
            (marker.stat().st_mtime, fit["busbw_gbps"], data["name"])
            for fit in data.get("fits", [])
            if fit.get("backend") == backend and fit.get("op") == "all_reduce" and fit.get("busbw_gbps")
        ]
    if not found:
        return None
    _, busbw, name = max(found)
    return busbw, LinkSource("bench", given=name)


def sweep_report(run_dir: Path, name: str, kind: str, predicted: dict[str, Estimate] | None = None) -> Report:
    """A sweep's report: the best setting's breakdown, and every setting in `sweep` (with its predicted gain,
    when `commprof advise` predicted one)."""
    record = SweepRecord.read(run_dir)
    analysed = {}
    for label in record.settings:
        trace = load_run([run_dir / label])
        analysis = analyze_run(trace, name=label, kind="run")
        report = analysis.report
        launch = read_run_json(run_dir / label)  # a script's profiled launch: ZeRO's collectives named as in a run's
        if launch is not None and launch.job.first(BuiltDeepSpeed):
            report = dataclasses.replace(report, collectives=with_zero_purposes(report.collectives))
        if launch is not None:  # a script's job and models, each with its own collectives in this setting's launch
            summary = launch.summary()
            report = dataclasses.replace(report, run=summary, models=model_accounts(summary, analysis.windows))
        analysed[label] = (report, trace.ranks[0] if trace.ranks[0].rank == 0 else None)
    result = sweep_result(record, analysed, kind)
    if predicted:
        result = dataclasses.replace(
            result, settings=[dataclasses.replace(s, predicted_gain_ms=predicted.get(s.label)) for s in result.settings]
        )
    config = record.plan.run
    best_launch = read_run_json(run_dir / result.best)  # a script's sweep: its profiled launch's own record
    rank_hosts = {str(r): h for r, h in enumerate(record.hosts)} or (
        best_launch.summary().rank_hosts if best_launch else {}
    )
    run = RunSummary(
        run_id=config.run_id,
        config=config,
        model=record.model,
        parameters=record.parameters,
        world_size=record.world_size,
        backend=config.backend,
        device=config.device,
        versions=record.versions,
        hosts=sorted(set(rank_hosts.values())),
        rank_hosts=rank_hosts,
        compiled=best_launch.compiled if best_launch else None,
        job=best_launch.job if best_launch else Job(),
    )
    best = dataclasses.replace(analysed[result.best][0], name=name, kind=kind, run=run, sweep=result)
    return dataclasses.replace(best, network=network_of(best))  # the hosts and links of the best setting's launch


def free_report_name(reports_dir: Path, *names: str) -> str:
    """The first of `names` that no folder in reports_dir has, else the last numbered from 2 (NAME-2, NAME-3, ...):
    a default name that never collides with a report already there."""
    for name in names:
        if not (reports_dir / name).exists():
            return name
    last = names[-1]
    return next(f"{last}-{n}" for n in itertools.count(2) if not (reports_dir / f"{last}-{n}").exists())


def prepare_report_dir(reports_dir: Path, name: str) -> Path:
    """A new folder for this report; never overwrites an existing one."""
    if reports_dir.exists() and not reports_dir.is_dir():
        raise UsageError(f"{reports_dir} exists and is not a folder")
    folder = reports_dir / name
    try:
        folder.mkdir(parents=True, exist_ok=False)
    except FileExistsError:
        raise UsageError(
            f"{folder} already exists; choose another --name (commprof never overwrites a report)"
        ) from None
    except OSError as exc:
        where = next((p for p in folder.parents if p.exists()), Path("."))
        raise UsageError(f"cannot create {folder}: {why_not_written(where, exc)}") from None
    return folder


def write_report(
    result: Result,
    reports_dir: Path,
    name: str,
    timeline: dict | None = None,
    traces: Path | None = None,
    apart: FigureProcess | None = None,
) -> list[Path]:
    """A new folder reports_dir/name with every file of the result (render.outputs), the page first; the
    TensorBoard event files go next to the traces (traces/tensorboard) when commprof made them. `apart`: the
    process that draws the figures and writes the event files (render.figure_process)."""
    from commprof.render.outputs import write_result

    return write_result(
        result,
        prepare_report_dir(reports_dir, name),
        timeline,
        traces / "tensorboard" if traces is not None else None,
        apart,
    )
