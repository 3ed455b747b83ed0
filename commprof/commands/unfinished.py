"""How a `commprof run` that did not complete ends: the one line it says, and the report of what it recorded.

A failure (RunFailed) and an interrupt (Interrupted: SIGINT, SIGTERM) both leave the run folder with every trace
written and run.json saying so, with the steps every rank completed. When traces hold profiled steps that every
rank completed, they get a report marked incomplete, in reports/<run-id>/, its TensorBoard event files next to
the traces (traces/<run-id>/tensorboard/) as for a complete run, so that `commprof view <run-id>` shows them."""

from __future__ import annotations

from pathlib import Path

from commprof.commands.reporting import report_from_traces, write_report
from commprof.config import RunConfig
from commprof.errors import CommprofError, Interrupted, NothingToReport, RunFailed
from commprof.launch.runlog import read_run_json
from commprof.render.failure_words import failure_text
from commprof.render.unfinished_words import failed_line, interrupted_line, raised_line
from commprof.results.rank_facts import PartialReport, Refused, StepsDone


def failed_run(failure: RunFailed, config: RunConfig) -> RunFailed:
    """The failure's line, completed with what the run left: when the user's script raised (its traceback shown
    above), when it did and what to do; otherwise where the traces are and the partial report."""
    partial = partial_report(failure.run_dir, config.reports_dir)
    cause = failure_text(failure.cause)  # type: ignore[arg-type]  # a launch's facts, or a line
    if failure.traceback:
        done = _steps_completed(failure.run_dir)
        steps = steps_done(config, done) if done is not None else None
        refused = _setting_torch_refused(failure.traceback, config)
        line = raised_line(cause, steps, refused, failure.logs, partial)
        return RunFailed(line, failure.run_dir, traceback=failure.traceback)
    return RunFailed(failed_line(cause, failure.logs, failure.run_dir, partial), failure.run_dir)


# torch.compile's DDPOptimizer (torch/_dynamo/backends/distributed.py) refuses a bucket cap below DDP's first bucket
_FIRST_BUCKET_LARGER = "First bucket should be smaller/equal to other buckets"
# Lightning checks its Trainer's devices x num_nodes against the launcher's world size (fabric's torchelastic.py)
_LIGHTNING_WORLD = "does not match the world size"


def _setting_torch_refused(traceback: str, config: RunConfig) -> Refused | None:
    """What commprof gave the script that it failed on (a setting, a world size), where it was not its own code."""
    cap = config.ddp.bucket_cap_mb
    if _FIRST_BUCKET_LARGER in traceback and cap is not None and cap < 1:
        return Refused("compiled_cap", cap)
    if _LIGHTNING_WORLD in traceback:
        return Refused("lightning_world", config.world_size)
    return None


def interrupted_run(stop: Interrupted, config: RunConfig) -> Interrupted:
    """`interrupted at step N of M` and the partial report's page, or why there is none."""
    record = read_run_json(stop.run_dir) if stop.run_dir is not None else None
    if record is None or stop.run_dir is None:
        return stop
    if record.status == "complete":  # the ranks had finished: the end of the launch was interrupted
        line = interrupted_line(stop.run_dir, None, config.schedule.profiled_steps, PartialReport(None))
        return Interrupted(stop.signum, line, stop.run_dir)
    partial = partial_report(stop.run_dir, config.reports_dir)
    steps = steps_done(config, record.steps_completed or 0)
    line = interrupted_line(stop.run_dir, steps, config.schedule.profiled_steps, partial)
    return Interrupted(stop.signum, line, stop.run_dir)


def steps_done(config: RunConfig, done: int) -> StepsDone:
    """Steps every rank completed, of the run's; a script without --max-steps has no known length."""
    return StepsDone(done, config.max_steps or (None if config.script else config.steps))


def partial_report(run_dir: Path | None, reports_dir: Path) -> PartialReport:
    """A report of the steps every rank completed, marked incomplete, when the traces hold any."""
    if run_dir is None or not run_dir.is_dir():
        return PartialReport(None, "no_folder")
    if not any(run_dir.glob("*.pt.trace.json")):
        return PartialReport(None, "no_trace")
    try:
        report, timeline = report_from_traces([run_dir], name=run_dir.name, kind="run")
    except NothingToReport:  # every step the traces hold was cut short
        return PartialReport(None, "nothing_completed")
    except (CommprofError, OSError) as exc:
        return PartialReport(None, "error", str(exc).splitlines()[0])
    try:
        files = write_report(report, reports_dir, report.name, timeline, run_dir)
    except (CommprofError, OSError) as exc:
        return PartialReport(None, "error", str(exc).splitlines()[0])
    return PartialReport(files[0])


def _steps_completed(run_dir: Path | None) -> int | None:
    record = read_run_json(run_dir) if run_dir is not None else None
    return record.steps_completed if record is not None else None
