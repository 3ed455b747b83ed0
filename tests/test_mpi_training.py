"""DDP training over MPI: ranks from the MPI launcher's environment, gradients through a comm hook."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from commprof.errors import UsageError
from commprof.launch.deadline import GRACE_S
from commprof.launch.mpi import mpi_unavailable
from commprof.launch.runlog import read_run_json
from commprof.render.failure_words import failure_text
from commprof.results.failure_facts import Behind, Overdue
from commprof.results.hang import MPI_GROUP_DESC
from commprof.results.store import load_report
from commprof.trace.load import load_run
from commprof.worker.mpi_identity import identity_from_env
from tests.conftest import FAST_RUN, REPO, commprof_here, load_json


def test_identity_from_open_mpi_and_pmi_environments():
    open_mpi = {
        "OMPI_COMM_WORLD_RANK": "3",
        "OMPI_COMM_WORLD_SIZE": "8",
        "OMPI_COMM_WORLD_LOCAL_RANK": "1",
        "OMPI_COMM_WORLD_LOCAL_SIZE": "2",
    }
    assert identity_from_env(open_mpi) == {"RANK": "3", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2"}
    mpich = {"PMI_RANK": "5", "PMI_SIZE": "6", "MPI_LOCALRANKID": "2", "MPI_LOCALNRANKS": "3"}
    assert identity_from_env(mpich) == {"RANK": "5", "WORLD_SIZE": "6", "LOCAL_RANK": "2", "LOCAL_WORLD_SIZE": "3"}
    with pytest.raises(UsageError, match="not started by an MPI launcher"):
        identity_from_env({"RANK": "0"})


@pytest.mark.slow
@pytest.mark.skipif(mpi_unavailable() is not None, reason=str(mpi_unavailable()))
def test_ddp_gradients_over_mpi_are_traced_and_analysed(tmp_path):
    result = commprof_here(
        "run", "--backend", "mpi", "--run-id", "mpi", "--quiet", "--timeout", "120", *FAST_RUN, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    run = load_run([tmp_path / "traces" / "mpi"], workers=1)
    assert [r.rank for r in run.ranks] == [0, 1]
    buckets = sorted(
        int(b)
        for b in load_json(tmp_path / "traces" / "mpi" / "run.json")["ranks"][0]["ddp"]["rebuilt_bucket_sizes"].split(
            ","
        )
    )
    report = load_report(tmp_path / "reports" / "mpi" / "report.json")
    mpi_calls = [c for c in report.collectives if c.backend == "mpi"]
    assert [c.op for c in mpi_calls] == ["all_reduce"] * len(buckets)
    assert sorted(c.bytes for c in mpi_calls) == buckets and all(c.calls_per_step == 1 for c in mpi_calls)
    assert all(r.comm_ms > 0 for r in report.ranks)


@pytest.mark.slow
@pytest.mark.skipif(mpi_unavailable() is not None, reason=str(mpi_unavailable()))
def test_commprof_run_started_by_mpirun_is_one_job(tmp_path):
    """`mpirun -n 2 commprof run --backend gloo`: two processes, one rank each, one run folder."""
    from commprof.launch.mpi import mpi_command

    command, env = mpi_command(2, "commprof", ["run", "--backend", "gloo", "--run-id", "viampi", "--quiet", *FAST_RUN])
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr + done.stdout
    run = load_json(tmp_path / "traces" / "viampi" / "run.json")
    assert run["world_size"] == 2 and run["status"] == "complete" and run["config"]["procs_per_node"] == 2
    assert sorted(p.name for p in (tmp_path / "traces" / "viampi").glob("*.pt.trace.json")) == [
        "rank0.pt.trace.json",
        "rank1.pt.trace.json",
    ]
    report = load_report(tmp_path / "reports" / "viampi" / "report.json")
    assert {c.group_size for c in report.collectives} == {2}


FAULTY = REPO / "tests" / "data" / "faulty_model.py"


def faulty_mpi_run(
    tmp_path, run_id: str, timeout_s: int, steps: int, **fault: str
) -> tuple[subprocess.CompletedProcess, float]:
    """`commprof run --backend mpi` of tests/data/faulty_model.py, misbehaving as `fault` (its variables) says."""
    env = {**os.environ, **{f"COMMPROF_TEST_{name.upper()}": value for name, value in fault.items()}}
    started = time.monotonic()
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "commprof",
            "run",
            "--backend",
            "mpi",
            "--model",
            f"{FAULTY}:build",
            "--steps",
            str(steps),
            "--schedule",
            "2,1,4",
            "--batch-size",
            "8",
            "--timeout",
            str(timeout_s),
            "--run-id",
            run_id,
            "--quiet",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    return result, time.monotonic() - started


@pytest.mark.slow
@pytest.mark.skipif(mpi_unavailable() is not None, reason=str(mpi_unavailable()))
@pytest.mark.takes(38, "the stuck rank is stopped after --timeout 5 s and the deadline's 15 s of grace, under mpirun")
def test_an_mpi_rank_stuck_before_an_all_reduce_is_bounded_and_named(tmp_path):
    """Rank 1 sleeps before step 6's gradient all-reduce, which goes over mpi4py (no timeout of its own): rank 0's
    account says it waits in it, and commprof stops mpirun after --timeout and the grace, with the same words as
    the torchrun path."""
    result, seconds = faulty_mpi_run(tmp_path, "stuck", 5, 10, fault="hang", fault_step="6")
    assert result.returncode == 1 and seconds < 5 + 15 + 60, (seconds, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    # commprof's deadline stopped the job (MPI has no timeout of its own): rank 1 asleep in faulty_model.py after 5
    # steps, outside any collective; rank 0 in the all_reduce over mpi4py that commprof's DDP comm hook called
    record = read_run_json(tmp_path / "traces" / "stuck")
    assert record is not None and isinstance(record.failure, Overdue), record
    failure = record.failure
    assert (failure.timeout_s, failure.grace_s, failure.mpi) == (5, GRACE_S, True)
    hang = failure.hang
    assert isinstance(hang, Behind) and hang.ahead is not None, hang
    (behind,), (waiting,) = hang.behind, hang.waiting
    assert (behind.rank, behind.inside, behind.steps_done) == (1, None, 5) and behind.own_frame is not None
    assert (Path(behind.own_frame.file).name, behind.own_frame.function) == ("faulty_model.py", "misbehave")
    ahead = hang.ahead
    assert (ahead.op, ahead.group, ahead.group_desc) == ("all_reduce", "COMM_WORLD", MPI_GROUP_DESC)
    assert (len(ahead.sizes), ahead.dtypes) == (1, ["Float"])
    assert waiting.rank == 0 and waiting.inside == ahead and waiting.own_frame is None
    hook = [f for f in waiting.stack if "/commprof/" in f.file][-1]  # the innermost of commprof's own frames
    assert (hook.function, Path(hook.file).name) == ("mpi_allreduce_hook", "ddp.py")
    assert lines[0].startswith(f"error: {failure_text(failure)} (worker logs: "), lines[0]
    logs = next((tmp_path / "traces" / "stuck" / "logs").iterdir())
    assert sorted(p.name for p in logs.glob("hang_rank*.json")) == ["hang_rank0.json", "hang_rank1.json"]
    assert (logs / "mpirun.log").is_file()
