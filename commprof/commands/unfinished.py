"""How a `commprof run` that did not complete ends: the one line it says, and the report of what it recorded.

A failure (RunFailed) and an interrupt (Interrupted: SIGINT, SIGTERM) both leave the run folder with every trace
written and run.json saying so, with the steps every rank completed. When traces hold profiled steps that every
rank completed, they get a report marked incomplete, in reports/<run-id>/, its TensorBoard event files next to
the traces (traces/<run-id>/tensorboard/) as for a complete run, so that `commprof view <run-id>` shows them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from commprof.commands.reporting import report_from_traces, write_report
from commprof.config import RunConfig
from commprof.errors import CommprofError, Interrupted, NothingToReport, RunFailed
from commprof.launch.runlog import read_run_json


@dataclass(frozen=True)
class PartialReport:
    page: Path | None  # the report's page; None when none was written
    why_not: str = ""  # why none was written: a clause such as "no trace was written"


def failed_run(failure: RunFailed, config: RunConfig) -> RunFailed:
    """The failure's line, completed with what the run left: when the user's script raised (its traceback shown
    above), when it did and what to do; otherwise where the traces are and the partial report."""
    partial = partial_report(failure.run_dir, config.reports_dir)
    logs = f"worker logs: {failure.logs}" if failure.logs is not None else ""
    if failure.traceback:
        done = _steps_completed(failure.run_dir)
        when = f" {at_step(config, done)}" if done is not None else ""
        where = "; ".join(
            part
            for part in (logs, f"partial report, marked incomplete: {partial.page}" if partial.page else "")
            if part
        )
        remedy = _setting_torch_refused(failure.traceback, config) or "fix the script and run it again"
        return RunFailed(
            f"{failure.cause}{when}; {remedy}" + (f" ({where})" if where else ""),
            failure.run_dir,
            traceback=failure.traceback,
        )
    line = f"{failure.cause} ({logs})" if logs else failure.cause
    if failure.run_dir is None:
        return RunFailed(line)
    if partial.page is not None:
        line += f"; traces kept in {failure.run_dir}/, partial report (marked incomplete): {partial.page}"
    elif partial.why_not == NO_TRACE:
        line += f"; {NO_TRACE} before the failure (run.json and step logs in {failure.run_dir}/)"
    else:
        line += f"; traces kept in {failure.run_dir}/, {partial.why_not}"
    return RunFailed(line, failure.run_dir)


# torch.compile's DDPOptimizer (torch/_dynamo/backends/distributed.py) refuses a bucket cap below DDP's first bucket
_FIRST_BUCKET_LARGER = "First bucket should be smaller/equal to other buckets"
# Lightning checks its Trainer's devices x num_nodes against the launcher's world size (fabric's torchelastic.py)
_LIGHTNING_WORLD = "does not match the world size"


def _setting_torch_refused(traceback: str, config: RunConfig) -> str | None:
    """What to do where the script failed on what commprof gave it (a setting, a world size), not on its own code."""
    cap = config.ddp.bucket_cap_mb
    if _FIRST_BUCKET_LARGER in traceback and cap is not None and cap < 1:
        return (
            f"torch.compile's DDPOptimizer needs buckets no smaller than DDP's 1 MiB first bucket, and "
            f"--bucket-cap-mb {cap:g} is smaller: give 1 or more"
        )
    if _LIGHTNING_WORLD in traceback:
        ranks = f"{config.world_size} rank{'s' if config.world_size != 1 else ''}"
        return (
            f"the script's Lightning Trainer fixes its devices and nodes, whose product must be the world size "
            f"launched ({ranks}): run it at its own world size, or give its Trainer devices='auto'"
        )
    return None


def interrupted_run(stop: Interrupted, config: RunConfig) -> Interrupted:
    """`interrupted at step N of M` and the partial report's page, or why there is none."""
    record = read_run_json(stop.run_dir) if stop.run_dir is not None else None
    if record is None or stop.run_dir is None:
        return stop
    if record.status == "complete":  # the ranks had finished: the end of the launch was interrupted
        return Interrupted(
            stop.signum,
            f"interrupted after the last step; the run is complete (`commprof analyze {stop.run_dir}` reports on it)",
            stop.run_dir,
        )
    head = f"interrupted {at_step(config, record.steps_completed or 0)}"
    partial = partial_report(stop.run_dir, config.reports_dir)
    if partial.page is not None:
        tail = f"partial report (marked incomplete): {partial.page}"
    elif partial.why_not in (NO_TRACE, NOTHING_COMPLETED):
        tail = f"no profiled step completed before the interrupt ({profiled_steps(config)}): no report"
    else:
        tail = partial.why_not
    return Interrupted(stop.signum, f"{head}; {tail}", stop.run_dir)


def at_step(config: RunConfig, done: int) -> str:
    """'at step 12 of 200' (steps every rank completed, of the run's); a script without --max-steps has no known
    length: 'at step 12'."""
    if done == 0:
        return "before the first step completed"
    total = config.max_steps or (None if config.script else config.steps)
    return f"at step {done} of {total}" if total else f"at step {done}"


def profiled_steps(config: RunConfig) -> str:
    """Which steps the profiler records, counted from 1 as `at step N` counts them."""
    first = config.schedule.wait + config.schedule.warmup + 1
    return f"the profiler records steps {first}-{first + config.schedule.active - 1}"


NO_TRACE = "no trace was written"
NOTHING_COMPLETED = "no step its traces hold completed on every rank: no partial report"


def partial_report(run_dir: Path | None, reports_dir: Path) -> PartialReport:
    """A report of the steps every rank completed, marked incomplete, when the traces hold any."""
    if run_dir is None or not run_dir.is_dir():
        return PartialReport(None, "the run folder was not created")
    if not any(run_dir.glob("*.pt.trace.json")):
        return PartialReport(None, NO_TRACE)
    try:
        report, timeline = report_from_traces([run_dir], name=run_dir.name, kind="run")
    except NothingToReport:  # every step the traces hold was cut short
        return PartialReport(None, NOTHING_COMPLETED)
    except (CommprofError, OSError) as exc:
        return PartialReport(None, f"no partial report ({str(exc).splitlines()[0]})")
    try:
        files = write_report(report, reports_dir, report.name, timeline, run_dir)
    except (CommprofError, OSError) as exc:
        return PartialReport(None, f"no partial report ({str(exc).splitlines()[0]})")
    return PartialReport(files[0])


def _steps_completed(run_dir: Path | None) -> int | None:
    record = read_run_json(run_dir) if run_dir is not None else None
    return record.steps_completed if record is not None else None
