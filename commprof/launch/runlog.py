"""run.json (results/run_record.RunRecord), the run folder's record of the run: written when the run starts (status
"running", with the measured clock offsets), replaced when it completes ("complete", with every rank's results), and
marked "failed" by the launcher when a rank fails, or "interrupted" when commprof was (SIGINT, SIGTERM)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from commprof.config import RunConfig
from commprof.launch.atomic import now, write_text_atomic
from commprof.launch.step_log import read_step_logs
from commprof.results.failure_facts import Failure
from commprof.results.run_record import RunRecord

RUN_JSON = "run.json"


def read_run_json(run_dir: Path) -> RunRecord | None:
    try:
        return RunRecord.from_json((run_dir / RUN_JSON).read_bytes())
    except (OSError, ValueError):
        return None


def write_run_json(run_dir: Path, record: RunRecord) -> None:
    write_text_atomic(run_dir / RUN_JSON, record.to_json())


def started_by(run_dir: Path, launch_id: str) -> bool:
    """Whether this launch's rank 0 created the run folder (and not another run with the same id)."""
    record = read_run_json(run_dir)
    return record is not None and bool(launch_id) and record.config.launch_id == launch_id


def claim_if_unstarted(config: RunConfig, host: str) -> None:
    """A launch whose rank 0 failed before writing run.json (the launcher may stop it while it still imports, once
    another rank failed first) starts the record itself, so the failure is recorded all the same."""
    if (config.run_dir / RUN_JSON).exists():
        return
    config.run_dir.mkdir(parents=True, exist_ok=True)
    record = RunRecord(
        run_id=config.run_id,
        config=config,
        world_size=config.world_size,
        hosts=[host],
        start_time=now(),
        script=list(config.script) or None,
    )
    write_run_json(config.run_dir, record)


def mark_failed(run_dir: Path, failure: Failure | str) -> None:
    """Record the failure (its facts, or a setup problem's line) in run.json, with the steps every rank completed."""
    if isinstance(failure, str):
        _mark_ended(run_dir, "failed", failure)
    else:
        _mark_ended(run_dir, "failed", None, failure)


def mark_interrupted(run_dir: Path, how: str) -> None:
    """Record the interrupt (`how`: "interrupted by SIGINT") in run.json, with the steps every rank completed."""
    _mark_ended(run_dir, "interrupted", how)


def _mark_ended(run_dir: Path, status: str, error: str | None, failure: Failure | None = None) -> None:
    """A run that did not complete, unless it did before the end came."""
    record = read_run_json(run_dir)
    if record is None or record.status == "complete":
        return
    logs = read_step_logs(run_dir)
    record = replace(
        record,
        status=status,
        error=error,
        failure=failure,
        end_time=now(),
        steps_completed=min((log["steps_done"] for log in logs.values()), default=0),
        steps_done_by_rank={str(r): log["steps_done"] for r, log in sorted(logs.items())},
    )
    try:
        write_run_json(run_dir, record)
    except OSError:  # a full or vanished file system: the failure is still reported on the terminal
        pass
