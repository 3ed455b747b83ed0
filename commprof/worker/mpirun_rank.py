"""What every rank of a job commprof started under mpirun does around its work (launch/mpi_job.py reads what it
leaves), as torch's elastic agent does for the ranks it starts (launch/launcher.py):

- its identity from the MPI launcher's environment (RANK, WORLD_SIZE, LOCAL_RANK: worker/mpi_identity.py);
- its stdout and stderr in files of its own, `<logs>/<local rank>/stdout.log` and `stderr.log`, the layout of torch's
  agent (`attempt_0/<local rank>/`), so that the launch reads them as it reads the agent's (launch/faults.py);
- its pid in `<pids>/<rank>`: the launch ends a rank that outlives an mpirun it had to kill;
- its error, if it fails, recorded as torch's agent records it (TORCHELASTIC_ERROR_FILE, `<errors>/<rank>/error.json`),
  its stop (SIGTERM, SIGINT) turned into an exception and its account written (worker/rank.exit_on_error)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Callable

from commprof.worker.mpi_identity import identity_from_env, node_local_from_mpi

ERROR_FILE_VARIABLE = "TORCHELASTIC_ERROR_FILE"  # where torch's error handler records a rank's error


def as_mpirun_rank(plan_path: str, work: Callable[[dict[str, Any]], Any]) -> None:
    """`work(plan)` as this rank of the job `plan_path` describes (launch/mpi_job.py writes it)."""
    from commprof.worker.rank import exit_on_error

    plan = json.loads(Path(plan_path).read_text())
    os.environ.update(identity_from_env(os.environ, node_local_from_mpi))
    rank, local_rank = os.environ["RANK"], os.environ["LOCAL_RANK"]
    output_to(Path(plan["logs"]) / local_rank)
    Path(plan["pids"], rank).write_text(str(os.getpid()))
    errors = Path(plan["errors"]) / rank
    errors.mkdir(parents=True, exist_ok=True)
    os.environ[ERROR_FILE_VARIABLE] = str(errors / "error.json")
    exit_on_error(work)(plan)


def output_to(folder: Path) -> None:
    """This process's stdout and stderr (its file descriptors: what C++ and MPI write too) into `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    for stream, name in ((sys.stdout, "stdout.log"), (sys.stderr, "stderr.log")):
        stream.flush()
        file = os.open(folder / name, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(file, stream.fileno())
        os.close(file)
