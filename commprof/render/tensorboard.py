"""TensorBoard event files with the report's own numbers: scalars per rank and step, collectives, cross-rank,
HParams per sweep setting, scale curves, backends side by side, and the report's words as text.

Layout under the folder given (`<run>/tensorboard` next to the profiler traces): `rank<r>/` (per-step
breakdown, the first MAX_RANK_RUNS ranks), `job/` (collectives, cross-rank, text), `whole_run/` (every step of the
run, by training step), `hparams/<setting>/` (sweep and tune), `scale/`, `backend-<name>/` or `strategy-<name>/`
(compare). TensorBoard shows each subfolder as a run.
"""

from __future__ import annotations

import re
from pathlib import Path

from commprof.render import markdown
from commprof.render.compare import verdict_text
from commprof.render.event_files import EventWriter
from commprof.render.report_view import document
from commprof.render.tables import headline
from commprof.results.common import Result
from commprof.results.compare import CompareResult
from commprof.results.report import Report
from commprof.results.scale import ScaleReport
from commprof.results.whole_run import WholeRun
from commprof.values import human_bytes

STEP_FIGURES = ("window_ms", "compute_ms", "comm_ms", "overlap_ms", "exposed_comm_ms", "idle_ms")
# Per-step runs for the first ranks only, as the timelines: one writer per rank would make thousands of runs. The
# cross-rank scalars of the `job` run cover every rank.
MAX_RANK_RUNS = 64
_STEP_NUMBER = re.compile(r"(\d+)$")


# What each TensorBoard tab shows of commprof's runs (printed by `commprof view`, docs/commands/view.md); the last
# is a page.
TABS = (
    (
        "Scalars",
        "#scalars",
        "per rank (rank<r>): step, compute, communication, overlap, exposed communication and idle "
        "of every profiled step; job: each collective's duration and busbw per step, per-rank waiting; "
        "live/rank<r>: every step of a running job as it comes",
    ),
    (
        "HParams",
        "#hparams",
        "sweeps and tunes: one run per setting with its median step time, CI and exposed communication",
    ),
    ("Text", "#text", "the report's headline and report.md"),
    (
        "Trace",
        "data/plugin/pytorch_profiler/commprof-trace.html",
        "one rank's timeline in the profiler plugin's trace viewer, served offline: pick the run and the worker",
    ),
    (
        "PyTorch Profiler",
        "#pytorch_profiler",
        "the plugin's own views: their charts need Google Charts from the internet, so offline they show a spinner",
    ),
)


def write_events(result: Result, logdir: Path) -> Path | None:
    """The event files of a result under `logdir`; None for kinds with nothing to chart (bench, backends, diff)."""
    if isinstance(result, Report):
        _report(result, logdir)
    elif isinstance(result, ScaleReport):
        _scale(result, logdir)
    elif isinstance(result, CompareResult):
        _compare(result, logdir)
    else:
        return None
    return logdir


def step_number(name: str, index: int) -> int:
    """ProfilerStep#12 -> 12; a window without a number (the whole trace) -> its index."""
    match = _STEP_NUMBER.search(name)
    return int(match.group(1)) if match else index


def _writer(folder: Path) -> EventWriter:
    return EventWriter(folder)


def _report(report: Report, logdir: Path) -> None:
    for rank in report.ranks[:MAX_RANK_RUNS]:
        mine = [s for s in report.steps if s.rank == rank.rank]
        with _writer(logdir / f"rank{rank.rank}") as writer:
            for index, step in enumerate(mine):
                number = step_number(step.step, index)
                for figure in STEP_FIGURES:
                    writer.add_scalar(f"step/{figure}", getattr(step, figure), number)
                if step.compute_ms > 0:
                    writer.add_scalar("step/comm_compute_ratio", step.comm_ms / step.compute_ms, number)
    with _writer(logdir / "job") as writer:
        several = bool(report.dimensions)  # rows of the same op and size over several dimensions: each its own tag
        for c in report.collectives:
            over = f", {c.group}" if several and c.group else ""
            tag = f"collectives/{c.op} {human_bytes(c.bytes)} ({c.backend}{over})"
            writer.add_scalar(f"{tag}/calls_per_step", c.calls_per_step, 0)
            for index, c_step in enumerate(c.steps):  # x axis: the step, as in rank<r>/
                number = step_number(c_step.step, index)
                writer.add_scalar(f"{tag}/mean_ms", c_step.mean_ms, number)
                if c_step.busbw_gbps is not None:
                    writer.add_scalar(f"{tag}/busbw_gbps", c_step.busbw_gbps, number)
        if report.cross_rank is not None:
            for skew in report.cross_rank.ranks:  # x axis: the rank
                writer.add_scalar("cross_rank/wait_ms", skew.wait_ms, skew.rank)
                writer.add_scalar("cross_rank/transfer_ms", skew.transfer_ms, skew.rank)
                writer.add_scalar("cross_rank/makes_others_wait_ms", skew.wait_caused_ms, skew.rank)
            writer.add_scalar("cross_rank/straggler_cost_ms", report.cross_rank.straggler_cost_ms, 0)
        for d in report.dimensions:  # x axis: the rank
            for who, ms in d.rank_comm_ms.items():
                writer.add_scalar(f"dimension/{d.dimension}/comm_ms", ms, int(who))
            for who, ms in d.rank_exposed_ms.items():
                writer.add_scalar(f"dimension/{d.dimension}/exposed_ms", ms, int(who))
        writer.add_text("report/headline", headline(report), 0)
        writer.add_text("report/report.md", markdown.render(document(report)), 0)
    if report.whole_run is not None:
        _whole_run(report.whole_run, logdir / "whole_run")
    if report.sweep is not None:
        _hparams(report, logdir / "hparams")


def _whole_run(whole: WholeRun, folder: Path) -> None:
    """x axis: the training step (a block of steps at its first); no collective time where none was timed."""
    with _writer(folder) as writer:
        for point in whole.series:
            writer.add_scalar("whole_run/step_ms", point.step_ms, point.first_step)
            writer.add_scalar("whole_run/step_ms_max", point.step_ms_max, point.first_step)
            if whole.timed_by:
                writer.add_scalar("whole_run/comm_ms", point.comm_ms, point.first_step)
        for s in whole.standouts:
            writer.add_scalar("whole_run/standout_step_ms", s.step_ms, s.step)


def _hparams(report: Report, folder: Path) -> None:
    assert report.sweep is not None, "only for a sweep's report"
    for s in report.sweep.settings:
        with _writer(folder / s.label) as writer:
            writer.add_hparams(
                {k: v for k, v in s.options.items() if v is not None},  # a script's own sets no bucket_cap_mb
                {
                    "hparam/step_ms": s.step_ms.value,
                    "hparam/step_ms_ci_low": s.step_ms.low,
                    "hparam/step_ms_ci_high": s.step_ms.high,
                    "hparam/exposed_comm_ms": s.exposed_comm_ms,
                },
            )


def _scale(report: ScaleReport, logdir: Path) -> None:
    with _writer(logdir / "scale") as writer:
        for point in report.points:  # x axis: the world size
            writer.add_scalar("scale/step_ms", point.step_ms.value, point.world_size)
            writer.add_scalar("scale/speedup", point.speedup, point.world_size)
            writer.add_scalar("scale/efficiency", point.efficiency, point.world_size)
        for p in report.predictions:
            writer.add_scalar("scale/predicted_speedup", p.speedup, p.world_size)
            writer.add_scalar("scale/predicted_efficiency", p.efficiency, p.world_size)


def _compare(result: CompareResult, logdir: Path) -> None:
    for row in result.rows:
        if not row.available:
            continue
        with _writer(logdir / f"{result.compared}-{row.name}") as writer:
            for figure in ("step_ms", "comm_ms", "exposed_comm_ms", "overlap_ms"):
                if getattr(row, figure) is not None:
                    writer.add_scalar(f"backend/{figure}", getattr(row, figure), 0)
    with _writer(logdir / "job") as writer:
        writer.add_text("report/summary", verdict_text(result), 0)
