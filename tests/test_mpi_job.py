"""The MPI path of a launch (launch/mpi_job.py), in pieces, with no process started: a rank's MPI collectives in its
account of a stall, the deadline that bounds a wait in one, mpirun's words read, and each rank's end told as the
torchrun path tells it. Real mpirun jobs are in test_mpi_training.py."""

import dataclasses
import json
import signal

import torch

from commprof.instrument import mpi_collectives
from commprof.instrument.hang_watch import HangWatch
from commprof.launch.deadline import GRACE_S, CollectiveDeadline
from commprof.launch.faults import root_cause
from commprof.launch.job import Task
from commprof.launch.launcher import rank_stderr
from commprof.launch.mpi import first_exit, last_said
from commprof.launch.mpi_job import MpirunPlan, rank_outcomes
from commprof.results.failure_facts import Behind, Killed, Overdue, OwnError
from commprof.results.hang import (
    MPI_GROUP_DESC,
    EnteredCollective,
    HangEvidence,
    StackFrame,
    encode,
    evidence_path,
    read_evidence,
)

# Open MPI 5's words (prterun), as measured: a rank SIGKILLed, and a rank that exited 1
KILLED = """--------------------------------------------------------------------------
prterun noticed that process rank 1 with PID 2545 on node vm exited on
signal 9 (Killed).
--------------------------------------------------------------------------
"""
EXITED = """--------------------------------------------------------------------------
prterun detected that one or more processes exited with non-zero status,
thus causing the job to be terminated. The first process to do so was:

   Process name: [prterun-vm-5785@1,1]
   Exit code:    1
--------------------------------------------------------------------------
"""
OPEN_MPI_4 = "  Process name: [[12345,1],3]\n  Exit code:    2\n"  # Open MPI 4's words for a rank that exited 2


def test_a_rank_inside_an_mpi_all_reduce_says_so_and_the_deadline_bounds_it_without_a_timeout_given(tmp_path):
    """torch's Flight Recorder never sees an all-reduce over mpi4py: the rank's own record does, and a deadline that
    acts only on collectives without a timeout of their own (no --timeout given) stops a wait in one."""
    now = [0.0]
    deadline = CollectiveDeadline(tmp_path, timeout_s=300, clock=lambda: now[0], every_collective=False)
    watch = HangWatch(tmp_path, 0, timeout_s=300)
    with mpi_collectives.entered("all_reduce", torch.zeros(33_088)):
        watch.write(30.0)
        account = read_evidence(tmp_path)[0]
        inside = account.inside
        assert inside is not None and (inside.op, inside.sizes, inside.dtypes) == ("all_reduce", [[33_088]], ["Float"])
        for waited in (300 + GRACE_S - 1, 300 + GRACE_S + 1):  # the account as its rank rewrites it meanwhile
            now[0] = inside.entered_s + waited
            evidence_path(tmp_path, 0).write_bytes(encode(dataclasses.replace(account, taken_s=now[0] - 1)))
            assert deadline.passed() == (waited > 300 + GRACE_S)
    assert mpi_collectives.recent()[-1].completed
    # where the ranks were: rank 0 in the MPI all-reduce, its account last rewritten 315 s after it entered it
    hang = deadline.overdue
    assert isinstance(hang, Behind) and hang.behind == () and [e.rank for e in hang.waiting] == [0]
    assert round(hang.waiting[0].taken_s - inside.entered_s) == 300 + GRACE_S
    assert hang.ahead == inside and (inside.group, inside.group_desc) == ("COMM_WORLD", MPI_GROUP_DESC)
    assert deadline.summary("vm") == Overdue(hang, "vm", timeout_s=300, grace_s=GRACE_S, mpi=True)


def test_without_a_timeout_given_a_wait_in_a_process_groups_collective_is_left_to_its_own_timeout(tmp_path):
    gloo = EnteredCollective("0", "default_pg", 4, "all_reduce", [[272]], ["Float"], False, 1_000.0)
    waiting = HangEvidence(0, "vm", 3, 1_000.0 + 3_600, 3_600.0, [StackFrame("/x.py", 1, "f", "", False)], [gloo])
    evidence_path(tmp_path, 0).write_bytes(encode(waiting))
    clock = lambda: 1_000.0 + 3_600  # noqa: E731
    assert not CollectiveDeadline(tmp_path, 300, clock, every_collective=False).passed()
    assert CollectiveDeadline(tmp_path, 300, clock).passed()


def test_what_mpirun_says_of_the_rank_that_ended_the_job():
    assert first_exit(KILLED) == (1, -9)
    assert first_exit(EXITED) == (1, 1)
    assert first_exit(OPEN_MPI_4) == (3, 2)
    assert first_exit("") is None
    assert last_said(KILLED) == " ".join(KILLED.splitlines()[1:3])  # its box's two lines, as one
    assert last_said("one\nlast line\n") == "one last line" and last_said("") == "no output"


def test_each_ranks_end_is_told_as_on_the_torchrun_path(tmp_path):
    """Rank 1 recorded its error as torch's agent records one, and mpirun named it; rank 0, stopped by mpirun, left
    nothing: rank 1 is the cause. A rank killed by a signal, named by mpirun, is said killed by it."""
    errors, log_dir = tmp_path / "errors", tmp_path / "logs"
    plan = MpirunPlan.in_folders({}, tmp_path / "progress.json", tmp_path, log_dir, "r")
    (errors / "1").mkdir(parents=True)
    message = {"message": "ValueError: the batch is empty", "extraInfo": {"py_callstack": "", "timestamp": "17"}}
    (errors / "1" / "error.json").write_text(json.dumps({"message": message}))
    told = rank_outcomes(2, errors, log_dir, first_exit(EXITED))
    assert [(o.rank, o.kind) for o in told] == [(0, "stopped"), (1, "error")]
    assert root_cause(told, "vm") == OwnError(1, "vm", "ValueError: the batch is empty", 1)
    (errors / "1" / "error.json").unlink()
    killed = rank_outcomes(2, errors, log_dir, first_exit(KILLED))
    assert [o.exitcode for o in killed] == [-signal.SIGTERM, -signal.SIGKILL]
    assert root_cause(killed, "vm") == Killed(1, "vm", signal.SIGKILL)
    # each rank's log, where the torchrun path reads its ranks' logs
    (log_dir / "r_mpirun" / "attempt_0" / "1").mkdir(parents=True)
    (log_dir / "r_mpirun" / "attempt_0" / "1" / "stderr.log").write_text("said by rank 1\n")
    assert plan.logs == str(log_dir / "r_mpirun" / "attempt_0") and rank_stderr(log_dir, 1) == "said by rank 1\n"


def test_a_job_under_mpirun_has_no_limit_on_its_time_unless_its_task_asks():
    assert Task(None, "commprof.worker.mpi_train", {}).mpi_time_limit_s is None
