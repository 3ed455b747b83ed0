"""The run folder's own records besides the traces: run.json (results/run_record.RunRecord) and one step log
per rank.

run.json is written when the run starts (status "running", with the measured clock offsets), replaced when it
completes ("complete", with every rank's results), and marked "failed" by the launcher when a rank fails, or
"interrupted" when commprof was (SIGINT, SIGTERM). Each rank appends each step's time to rank<N>.steps.txt as the
step ends and rewrites rank<N>.steps.json now and then, so the steps that completed are known even for a rank that
was killed; the times are kept up to STEP_TIMES_AFTER_WINDOW steps after the profiler's window, the later steps
only counted (rank<N>.steps.count), so a long run's files stop growing. A file rewritten whole goes to a temporary
name first and is renamed, so no reader ever sees half of one."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TextIO

from commprof.config import ProfileSchedule, RunConfig
from commprof.results.run_record import Compiled, RankRecord, RunRecord, ScriptRankInfo

RUN_JSON = "run.json"
STEP_LOG_SUFFIX = ".steps.json"
STEP_LINES_SUFFIX = ".steps.txt"
STEP_COUNT_SUFFIX = ".steps.count"  # past the steps whose times are kept


def write_json_atomic(path: Path, data: Any) -> None:
    write_text_atomic(path, json.dumps(data, indent=2))


def write_text_atomic(path: Path, text: str) -> None:
    write_bytes_atomic(path, text.encode())


def write_bytes_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise


def now() -> str:
    return datetime.now(timezone.utc).isoformat()


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


def mark_failed(run_dir: Path, error: str) -> None:
    """Record the failure in run.json, with the steps every rank completed."""
    _mark_ended(run_dir, "failed", error)


def mark_interrupted(run_dir: Path, how: str) -> None:
    """Record the interrupt (`how`: "interrupted by SIGINT") in run.json, with the steps every rank completed."""
    _mark_ended(run_dir, "interrupted", how)


def _mark_ended(run_dir: Path, status: str, error: str) -> None:
    """A run that did not complete, unless it did before the end came."""
    record = read_run_json(run_dir)
    if record is None or record.status == "complete":
        return
    logs = read_step_logs(run_dir)
    record = replace(
        record,
        status=status,
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
    infos = {rank: ScriptRankInfo.from_dict(log.get("info") or {}) for rank, log in logs.items()}
    first = infos.get(0, ScriptRankInfo())
    built, engines = first.ddp_built, first.deepspeed_built
    trained = built or engines or first.horovod_built
    record = replace(
        record,
        status="complete",
        end_time=now(),
        hosts=sorted({log["host"] for log in logs.values()}),
        steps_completed=min((log["steps_done"] for log in logs.values()), default=0),
        model=_model_of(first),
        parameters=trained[0].parameters if trained else None,
        tf32=first.tf32,
        ddp_built=built,
        deepspeed_built=engines,
        horovod_built=first.horovod_built,
        compiled=compiled_by_every_rank(infos),
        notes=first.notes + desync_notes(infos),
        link_probe=first.link_probe,
        link_tiers=first.link_tiers,
        cast_costs=first.cast_costs,
        ranks=[
            RankRecord(
                rank=rank,
                host=log["host"],
                device=infos[rank].device,
                trace=infos[rank].trace,
                step_ms=log["step_ms"],
                ddp=infos[rank].ddp,
                peak_memory_mb=infos[rank].peak_memory_mb,
            )
            for rank, log in sorted(logs.items())
        ],
    )
    write_run_json(run_dir, record)


def _model_of(info: ScriptRankInfo) -> str | None:
    """What the script trained, as the report names it: the module its DDP or DeepSpeed engine wraps; Horovod's
    optimizer, which knows no module."""
    if info.ddp_built or info.deepspeed_built:
        return (info.ddp_built or info.deepspeed_built)[0].module
    return f"Horovod DistributedOptimizer({info.horovod_built[0].optimizer})" if info.horovod_built else None


def compiled_by_every_rank(infos: dict[int, ScriptRankInfo]) -> Compiled | None:
    """Rank 0's torch.compile, with the steps in which any rank compiled: the others wait for a rank compiling."""
    first = infos.get(0, ScriptRankInfo()).compiled
    if first is None:
        return None
    steps = sorted({step for info in infos.values() if info.compiled for step in info.compiled.steps})
    return replace(first, steps=steps)


def desync_notes(infos: dict[int, ScriptRankInfo]) -> list[str]:
    """A note where the ranks' collectives parted without the backend noticing (results/sequences.py)."""
    from commprof.launch.hang_evidence import where_they_part
    from commprof.results.sequences import first_parting

    parted = where_they_part(first_parting({rank: info.collectives for rank, info in infos.items()}), lines_known=False)
    if parted is None:
        return []
    return [f"{parted}; the backend raised no error: what that collective returned is not what the script meant"]
