"""The run folder's own records besides the traces: run.json and one step log per rank.

run.json is written when the run starts (status "running", with the measured clock offsets),
replaced when it completes ("complete", with every rank's results), and marked "failed" by the
launcher when a rank fails. Each rank rewrites rank<N>.steps.json after every step, so the steps
that completed are known even for a rank that was killed. Every write goes to a temporary name
first and is renamed, so no reader ever sees half a file."""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

RUN_JSON = "run.json"
STEP_LOG_SUFFIX = ".steps.json"
STEP_LINES_SUFFIX = ".steps.txt"


def write_json_atomic(path: Path, data: Any) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_text(json.dumps(data, indent=2))
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise


def now() -> str:
    return datetime.now(timezone.utc).isoformat()


def step_log_path(run_dir: Path, rank: int) -> Path:
    return run_dir / f"rank{rank}{STEP_LOG_SUFFIX}"


def write_step_log(
    run_dir: Path, rank: int, host: str, step_ms: list[float], info: dict[str, Any] | None = None
) -> None:
    """`info`: what a rank running a user's script learned (its model, DDP, optimizers), written at its end."""
    record = {"rank": rank, "host": host, "steps_done": len(step_ms), "step_ms": step_ms, "updated": now()}
    write_json_atomic(step_log_path(run_dir, rank), {**record, **({"info": info} if info else {})})


class StepLines:
    """A rank's step times as they happen, one line appended per step: cheap enough for every step (one write),
    and complete up to the moment a rank is killed. The step log (JSON, with the host and what the rank learned)
    is rewritten only now and then; readers take the steps from here when it has more."""

    def __init__(self, run_dir: Path, rank: int):
        self.path, self.file = run_dir / f"rank{rank}{STEP_LINES_SUFFIX}", None

    def append(self, step_ms: float) -> None:
        if self.file is None:  # opened at the first step: the run folder exists by then
            self.file = open(self.path, "a", encoding="utf-8")
        self.file.write(f"{step_ms!r}\n")
        self.file.flush()


def read_step_logs(run_dir: Path) -> dict[int, dict[str, Any]]:
    logs = {}
    for path in run_dir.glob(f"rank*{STEP_LOG_SUFFIX}"):
        try:
            log = json.loads(path.read_text())
            logs[int(log["rank"])] = log
        except (OSError, ValueError, KeyError, TypeError):
            continue
    for rank, log in logs.items():
        steps = _step_lines(run_dir / f"rank{rank}{STEP_LINES_SUFFIX}")
        if len(steps) > log["steps_done"]:
            log.update(steps_done=len(steps), step_ms=steps)
    return logs


def _step_lines(path: Path) -> list[float]:
    """The complete lines (a kill can leave the last one half written)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return []
    lines = text.split("\n")[:-1]  # what follows the last newline is not a complete line
    try:
        return [float(line) for line in lines]
    except ValueError:
        return []


def read_run_json(run_dir: Path) -> dict[str, Any] | None:
    try:
        return json.loads((run_dir / RUN_JSON).read_text())
    except (OSError, ValueError):
        return None


def write_run_json(run_dir: Path, record: dict[str, Any]) -> None:
    write_json_atomic(run_dir / RUN_JSON, record)


def started_by(run_dir: Path, launch_id: str) -> bool:
    """Whether this launch's rank 0 created the run folder (and not another run with the same id)."""
    record = read_run_json(run_dir)
    return record is not None and bool(launch_id) and record.get("config", {}).get("launch_id") == launch_id


def mark_failed(run_dir: Path, error: str) -> None:
    """Record the failure in run.json, with the steps every rank completed."""
    record = read_run_json(run_dir)
    if record is None or record.get("status") == "complete":
        return
    logs = read_step_logs(run_dir)
    record.update(
        status="failed",
        error=error,
        end_time=now(),
        steps_completed=min((log["steps_done"] for log in logs.values()), default=0),
        steps_done_by_rank={str(r): log["steps_done"] for r, log in sorted(logs.items())},
    )
    try:
        write_run_json(run_dir, record)
    except OSError:  # a full or vanished file system: the failure is still reported on the terminal
        pass


def finish_script_run(run_dir: Path, launch_id: str) -> None:
    """After every rank of a user's script ended: run.json, completed from the ranks' step logs (the ranks of a
    script share no process group of commprof's to gather them with). Only the launch that started the run."""
    record = read_run_json(run_dir)
    if record is None or not started_by(run_dir, launch_id):
        return
    logs = read_step_logs(run_dir)
    infos = {rank: log.get("info", {}) for rank, log in logs.items()}
    first = infos.get(0, {})
    built = first.get("ddp_built", [])
    record.update(
        status="complete",
        end_time=now(),
        hosts=sorted({log["host"] for log in logs.values()}),
        steps_completed=min((log["steps_done"] for log in logs.values()), default=0),
        model=built[0]["module"] if built else None,
        parameters=built[0]["parameters"] if built else None,
        tf32=first.get("tf32"),
        ddp_built=built,
        notes=first.get("notes", []),
        link_probe=first.get("link_probe", []),
        ranks=[
            {
                "rank": rank,
                "host": log["host"],
                "device": infos[rank].get("device"),
                "trace": infos[rank].get("trace"),
                "step_ms": log["step_ms"],
                "ddp": infos[rank].get("ddp", {}),
                "peak_memory_mb": infos[rank].get("peak_memory_mb"),
            }
            for rank, log in sorted(logs.items())
        ],
    )
    write_run_json(run_dir, record)
