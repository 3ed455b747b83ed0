"""A healthy job that pauses is never stopped (issue 51): a rank that saves a checkpoint for longer than half of
--timeout, while the other waits for it in the next all-reduce, then both train on for longer than --timeout and the
deadline's grace, to the script's own end. Each pause is written as a stall (it lasts past half the timeout) and
withdrawn when its rank steps again; before that, the withdrawn stall's account stayed and commprof stopped the job
--timeout and the grace after the first pause began."""

import time

import pytest

from commprof.launch.deadline import GRACE_S
from tests.conftest import REPO, commprof

pytestmark = pytest.mark.slow
SCRIPT = REPO / "tests" / "data" / "scripts" / "pauses.py"
TIMEOUT = 10  # the ranks write a stall after 5 s without a step (half of it)


@pytest.mark.takes(55, "two pauses of 6 s, then a run on past --timeout 10 s and the deadline's 15 s of grace")
def test_a_job_that_pauses_on_either_rank_runs_to_its_own_end(tmp_path):
    pause_s, run_on_s = 6, TIMEOUT + GRACE_S + 2  # each pause past half the timeout; the run on past the deadline
    started = time.monotonic()
    args = ["run", "--run-id", "pauses", "--timeout", str(TIMEOUT), "--quiet", "--script-output", "all", "--"]
    result = commprof(*args, str(SCRIPT), str(pause_s), str(run_on_s), "0@5", "1@15", cwd=tmp_path, timeout=300)
    took = time.monotonic() - started
    assert result.returncode == 0, result.stderr[-3000:]
    assert "[rank0]: rank 0 ran" in result.stdout and "[rank1]: rank 1 ran" in result.stdout
    assert took > 2 * pause_s + run_on_s  # it did pause, and ran on past --timeout and the grace after each pause
    logs = tmp_path / "traces" / "pauses" / "logs"
    assert not list(logs.rglob("hang_rank*.json"))  # every stall withdrawn: none is left to blame anyone
