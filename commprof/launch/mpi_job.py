"""The MPI path of launch/job.run_job: a task's ranks started by mpirun (launch/mpi.py), and the job ended as the
torchrun path (launch/launcher.py) ends one:

- no limit on the job's time: a healthy run runs as long as it needs (a task may ask for one: Task.mpi_time_limit_s);
- each rank's hang watch (instrument/hang_watch.py) writes its account of a stall into the job's folder, where the
  progress view reads it; the collective deadline (launch/deadline.py) stops mpirun (SIGTERM, SIGKILL after a grace)
  once a rank has waited in one collective past --timeout and the grace: any collective when --timeout was given,
  otherwise only those commprof runs over MPI through mpi4py, which have no timeout of their own (a torch process
  group's collectives time out after --timeout, 300 s by default, as on the torchrun path);
- each rank's stdout and stderr in its own files (worker/mpirun_rank.py), mpirun's own output in MPIRUN_LOG as it
  comes; all kept in <run dir>/logs/<host>/, as the torchrun path keeps its ranks' logs;
- a failure said in one line by the same words (launch/faults.root_cause): each rank's recorded error, the exit status
  of the rank that mpirun says ended the job, the others stopped by mpirun; the ranks' accounts of a hang; where no
  rank left a word, what mpirun said last. Ctrl-C and SIGTERM stop mpirun and mark the run interrupted."""

from __future__ import annotations

import dataclasses
import json
import signal
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torch.distributed.elastic.multiprocessing.errors import ProcessFailure

from commprof.backends import by_name
from commprof.config import RunConfig
from commprof.errors import RunFailed
from commprof.launch import flight_recorder
from commprof.launch.deadline import CollectiveDeadline
from commprof.launch.faults import RankOutcome
from commprof.launch.hang_evidence import hang_evidence_environment
from commprof.launch.launcher import (
    job_failed,
    job_interrupted,
    keep_evidence,
    keep_logs,
    rank_outcome,
    rank_stderr,
    run_failed,
)
from commprof.launch.mpi import first_exit, last_said, mpi_command, start_mpirun
from commprof.launch.oom import OomWatch
from commprof.launch.result import LaunchResult
from commprof.native_logs import restore_for_workers
from commprof.results.failure_facts import MpirunFailed

MPIRUN_LOG = "mpirun.log"  # mpirun's own output, beside its ranks' folders


@dataclass(frozen=True)
class MpirunPlan:
    """What every rank reads from plan.json (worker/mpirun_rank.py): its task's payload, and where it writes."""

    payload: dict[str, Any]
    progress: str  # the progress file (launch/progress.py)
    result: str  # rank 0's result, for a task that returns one
    errors: str  # <rank>/error.json: a rank's error, as torch's agent records it
    logs: str  # <local rank>/stdout.log and stderr.log
    pids: str  # <rank>: its pid

    @classmethod
    def in_folders(
        cls, payload: dict[str, Any], progress: Path, job_dir: Path, log_dir: Path, run_id: str
    ) -> MpirunPlan:
        # the layout of torch's agent (<run id>_<id>/attempt_0/<local rank>/), read as the torchrun path reads it
        logs = log_dir / f"{run_id}_mpirun" / "attempt_0"
        return cls(
            payload,
            str(progress),
            str(job_dir / "result.json"),
            str(job_dir / "errors"),
            str(logs),
            str(job_dir / "pids"),
        )


def run_under_mpirun(
    config: RunConfig, module: str, payload: dict[str, Any], progress: Path, job_dir: Path, limit_s: float | None = None
) -> LaunchResult:
    """`python -m module plan.json` on every rank of this node under mpirun; `job_dir` holds the plan, the ranks'
    accounts of a stall (watched there) and their errors. RunFailed or Interrupted as launch/launcher.launch raises
    them; `limit_s`: a limit on the whole job's time (none by default)."""
    log_dir = Path(tempfile.mkdtemp(prefix="commprof-logs-"))
    plan = MpirunPlan.in_folders(payload, progress, job_dir, log_dir, config.run_id)
    (job_dir / "plan.json").write_text(json.dumps(dataclasses.asdict(plan)))
    command, env = mpi_command(config.procs_per_node, module, [str(job_dir / "plan.json")])
    restore_for_workers()
    env.update({name: value for name, value in ranks_environment(config, job_dir, log_dir).items() if name not in env})
    deadline = CollectiveDeadline(job_dir, config.timeout_s, every_collective=config.timeout_given)
    oom = OomWatch()
    mpirun = start_mpirun(command, env, log_dir / MPIRUN_LOG, Path(plan.pids))
    try:
        with deadline.watching(mpirun.stop):
            code = mpirun.wait(limit_s)
    except subprocess.TimeoutExpired:
        mpirun.stop()
        keep_evidence(job_dir, log_dir)
        raise run_failed(config, MpirunFailed(None, limit_s=limit_s), log_dir) from None
    except KeyboardInterrupt as stop:  # Ctrl-C (mpirun has it too), or Interrupted: SIGTERM to commprof
        mpirun.stop()
        keep_evidence(job_dir, log_dir)
        raise job_interrupted(config, getattr(stop, "signum", signal.SIGINT), log_dir) from None
    keep_evidence(job_dir, log_dir)
    if deadline.overdue:
        raise run_failed(config, deadline.summary(socket.gethostname()), log_dir)
    if code != 0:
        raise _failure(config, code, plan, log_dir, oom.killed())
    keep_logs(log_dir, config)
    result = json.loads(Path(plan.result).read_text()) if Path(plan.result).exists() else {}
    return LaunchResult(
        result.get("run_id", config.run_id),
        Path(result.get("run_dir", config.run_dir)),
        tuple(range(config.world_size)),
    )


def ranks_environment(config: RunConfig, job_dir: Path, log_dir: Path) -> dict[str, str]:
    """What the torchrun path adds to its ranks' environment: where to write an account of a stall, torch's Flight
    Recorder on (and, for a backend whose dumps commprof reads, where to dump)."""
    dumps = flight_recorder.environment(log_dir) if by_name(config.backend).flight_recorder else {}
    return {**hang_evidence_environment(job_dir), **dumps}


def _failure(config: RunConfig, code: int, plan: MpirunPlan, log_dir: Path, oom_kills: int) -> RunFailed:
    said = (log_dir / MPIRUN_LOG).read_text(errors="replace")
    first = first_exit(said)
    outcomes = rank_outcomes(config.procs_per_node, Path(plan.errors), log_dir, first)
    if first is None and not any(o.message for o in outcomes):  # no rank began, or none left a word: mpirun's own
        return run_failed(config, MpirunFailed(code, last_said(said)), log_dir)
    return job_failed(config, outcomes, log_dir, oom_kills)


def rank_outcomes(ranks: int, errors: Path, log_dir: Path, first: tuple[int, int] | None) -> list[RankOutcome]:
    """Each rank's end, as the torchrun path tells it: its recorded error, its log; its exit status where mpirun
    said it (`first`: the rank that ended the job first, and how), the others stopped by mpirun (SIGTERM)."""
    outcomes = []
    for rank in range(ranks):
        error_file = errors / str(rank) / "error.json"
        said_by_mpirun = first is not None and first[0] == rank
        exit_code = first[1] if first is not None and said_by_mpirun else -signal.SIGTERM if first else None
        failure = (
            ProcessFailure(rank, 0, exit_code if said_by_mpirun and exit_code else 1, str(error_file))
            if error_file.is_file()
            else None
        )
        outcomes.append(rank_outcome(rank, failure, rank_stderr(log_dir, rank), exit_code))
    return outcomes
