"""One step log per rank in the run folder: each rank appends each step's time to rank<N>.steps.txt as the step
ends and rewrites rank<N>.steps.json now and then, so the steps that completed are known even for a rank that was
killed; the times are kept up to STEP_TIMES_AFTER_WINDOW steps after the profiler's window, the later steps only
counted (rank<N>.steps.count), so a long run's files stop growing."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, TextIO

from commprof.config import ProfileSchedule
from commprof.launch.atomic import now, write_json_atomic
from commprof.results.run_record import ScriptRankInfo

STEP_LOG_SUFFIX = ".steps.json"
STEP_LINES_SUFFIX = ".steps.txt"
STEP_COUNT_SUFFIX = ".steps.count"  # past the steps whose times are kept


def step_log_path(run_dir: Path, rank: int) -> Path:
    return run_dir / f"rank{rank}{STEP_LOG_SUFFIX}"


STEP_TIMES_AFTER_WINDOW = 10_000  # steps whose times are kept after the profiler's window (then only counted)


def steps_kept(schedule: ProfileSchedule) -> int:
    """How many steps' times a rank keeps: the profiler's window and STEP_TIMES_AFTER_WINDOW after it."""
    return schedule.total + STEP_TIMES_AFTER_WINDOW


class StepLog:
    """A rank's steps: every one counted, the times of the first `kept` kept (run.json's step_ms, which the
    profiler's cost, `compare` and `scale` read; the whole-run record summarises every step in a fixed size).
    Each kept step is appended as a line as it happens, each later one rewrites a counter in place: one write a
    step, so a killed rank's steps are known to the last. The JSON step log, with the host and what the rank
    learned, is rewritten when `write` is called; readers take the steps from the lines or the counter when they
    have more."""

    def __init__(self, run_dir: Path, rank: int, host: str, kept: int):
        self.run_dir, self.rank, self.host, self.kept = run_dir, rank, host, kept
        self.step_ms: list[float] = []
        self.steps_done = 0
        self.last_ms = 0.0
        self.lines: TextIO | None = None
        self.counter: int | None = None  # a file descriptor

    def add(self, step_ms: float) -> None:
        self.steps_done += 1
        self.last_ms = step_ms
        if self.steps_done <= self.kept:
            self.step_ms.append(step_ms)
            self._append(step_ms)
        else:
            self._count()

    def _append(self, step_ms: float) -> None:
        if self.lines is None:  # opened at the first step: the run folder exists by then
            self.lines = open(self.run_dir / f"rank{self.rank}{STEP_LINES_SUFFIX}", "a", encoding="utf-8")
        self.lines.write(f"{step_ms!r}\n")
        self.lines.flush()
        if self.steps_done == self.kept:
            self.lines.close()

    def _count(self) -> None:
        if self.counter is None:
            path = self.run_dir / f"rank{self.rank}{STEP_COUNT_SUFFIX}"
            self.counter = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.pwrite(self.counter, f"{self.steps_done:>20}\n".encode(), 0)  # fixed width: never a stale tail

    def write(self, info: ScriptRankInfo | None = None) -> None:
        """`info`: what a rank running a user's script learned (its model, DDP, optimizers), written at its end."""
        record = {"rank": self.rank, "host": self.host, "steps_done": self.steps_done, "step_ms": self.step_ms}
        extra = {"info": info.to_dict()} if info else {}
        write_json_atomic(step_log_path(self.run_dir, self.rank), {**record, "updated": now(), **extra})


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
        log["steps_done"] = max(log["steps_done"], _step_count(run_dir / f"rank{rank}{STEP_COUNT_SUFFIX}"))
    return logs


def _step_count(path: Path) -> int:
    try:
        return int(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return 0


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
