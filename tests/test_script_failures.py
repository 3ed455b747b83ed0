"""`commprof run -- train.py`: a user's script that fails or hangs on 2 real Gloo ranks, and what commprof says:
the rank, the script's own line, within --timeout whatever timeout the script's process group has."""

import json
import time
import traceback
from pathlib import Path

import pytest

from commprof.launch.deadline import GRACE_S
from commprof.launch.runlog import read_run_json
from commprof.render.failure_words import failure_text
from commprof.render.unfinished_words import raised_line
from commprof.results.failure_facts import Behind, Failure, Hung, Limit, Overdue, OwnError, Raised
from commprof.results.hang import HangEvidence, StackFrame
from commprof.results.rank_facts import PartialReport, StepsDone
from tests.conftest import REPO, commprof, commprof_here

SCRIPTS = REPO / "tests" / "data" / "scripts"
pytestmark = pytest.mark.slow
TINY_SCHEDULE = ["--schedule", "1,1,2"]
FIRST_STEPS = ["--wait", "0", "--warmup", "0", "--active", "2"]  # profiled from the first step: a short failure
NAN_LABEL = "ValueError: batch 3 has a NaN label"  # what fails_on_rank1.py raises on rank 1


def run_json(cwd, run_id):
    return json.loads((cwd / "traces" / run_id / "run.json").read_text())


def failure_of(cwd: Path, run_id: str) -> Failure:
    """The run's failure, as run.json keeps its facts."""
    record = read_run_json(cwd / "traces" / run_id)
    assert record is not None and record.failure is not None, record
    return record.failure


def frame(script: Path, line: int, function: str) -> list[str]:
    """A frame of the script as python's own traceback module shows it: where, then its source line."""
    return traceback.format_list([traceback.FrameSummary(str(script), line, function)])[0].splitlines()


def at(frame: StackFrame | None) -> tuple[str, int, str, str]:
    assert frame is not None
    return Path(frame.file).name, frame.line, frame.function, frame.code


def assert_rank_1_asleep_and_rank_0_in_its_all_reduce(hang: object) -> HangEvidence:
    """hangs_on_rank1.py: rank 1 sleeps at line 20 after 3 steps, outside any collective; rank 0 waits in the
    default group's all_reduce of DDP's one bucket (272 floats), called by the backward at line 21."""
    assert isinstance(hang, Behind) and hang.ahead is not None
    (behind,), (waiting,) = hang.behind, hang.waiting
    assert (behind.rank, behind.inside, behind.steps_done) == (1, None, 3)
    assert at(behind.own_frame) == ("hangs_on_rank1.py", 20, "<module>", "time.sleep(3600)")
    ahead = hang.ahead
    assert (ahead.op, ahead.group_desc, ahead.sizes, ahead.dtypes) == ("all_reduce", "default_pg", [[272]], ["Float"])
    assert waiting.rank == 0 and waiting.inside == ahead
    return waiting


def test_a_script_that_fails_on_one_rank(tmp_path):
    """Its traceback as python shows it, once (rank 1's: rank 0 was only stopped), then one line: which rank, at
    which step, what to do, where the logs and the partial report are."""
    script = SCRIPTS / "fails_on_rank1.py"
    result = commprof_here(
        "run",
        "--run-id",
        "f",
        "--quiet",
        *FIRST_STEPS,
        "--",
        str(script),
        cwd=tmp_path,
    )
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert lines[:-1] == ["Traceback (most recent call last):", *frame(script, 15, "<module>"), NAN_LABEL], (
        result.stderr
    )
    record = run_json(tmp_path, "f")
    host = record["hosts"][0]
    assert record["status"] == "failed" and record["steps_completed"] == 3
    assert failure_of(tmp_path, "f") == OwnError(1, host, NAN_LABEL, 1)
    # the line under the traceback: rank 1 raised it, after the 3 steps every rank completed; its logs, and the
    # report of the steps the profiler recorded, marked incomplete
    partial = PartialReport(Path("reports/f/report.html"))
    said = raised_line(failure_text(Raised(1, host)), StepsDone(3, None), None, Path(f"traces/f/logs/{host}"), partial)
    assert lines[-1] == f"error: {said}", lines[-1]
    assert list((tmp_path / "traces" / "f" / "tensorboard" / "rank0").glob("events.out.tfevents.*"))


def test_a_script_that_fails_as_it_starts(tmp_path):
    """Every rank raises the same error at import: its traceback once, with file and line, and one line naming the
    first rank to fail and the others; nothing about a report, which there cannot be."""
    script = SCRIPTS / "fails_at_import.py"
    result = commprof_here("run", "--run-id", "start", "--quiet", "--", str(script), cwd=tmp_path)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert lines[:-1] == [
        "Traceback (most recent call last):",
        *frame(script, 10, "<module>"),
        "             " + "^" * len('load_config("experiment.yaml")'),
        *frame(script, 7, "load_config"),
        "FileNotFoundError: no configuration at experiment.yaml",
    ], result.stderr
    record = run_json(tmp_path, "start")
    host = record["hosts"][0]
    assert record["status"] == "failed" and record["steps_completed"] == 0
    # either rank first; the other raised it too, or was stopped by the launcher before it got that far; no step
    # completed, no trace written: no partial report to name
    logs, no_trace = Path(f"traces/start/logs/{host}"), PartialReport(None, "no_trace")
    raised = [Raised(rank, host, also) for rank in (0, 1) for also in ((), (1 - rank,))]
    said = [raised_line(failure_text(r), StepsDone(0, None), None, logs, no_trace) for r in raised]
    assert lines[-1] in [f"error: {s}" for s in said], lines[-1]


def test_a_script_that_never_initializes_torch_distributed(tmp_path):
    """It ends as under torchrun (every rank 0); the run says its ranks did not communicate."""
    result = commprof_here(
        "run", "--quiet", "--run-id", "alone", "--", str(SCRIPTS / "not_distributed.py"), cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert run_json(tmp_path, "alone")["script_notes"]["communicated"] is False
    assert "never initialized torch.distributed" in (tmp_path / "reports" / "alone" / "report.md").read_text()


# torch 2.13's profiler can crash as it stops while a Gloo thread still ends its record of the collective that
# just completed (teardown against in-flight RecordFunction callbacks, pytorch/pytorch#187483): 2 runs in 25 on
# this machine under load. commprof names the crash and where; a run it ended is tried once more.
PROFILER_STOP_RACE = "(SIGSEGV) in __exit__ (autograd/profiler.py:"


def test_a_script_that_hangs_on_one_rank(tmp_path):
    """The script's process group keeps torch's default timeout (30 minutes); --timeout 10 bounds it: the job ends
    well within the 120 s this test allows, rank 1 named as the one behind, at its line, and rank 0 in the collective
    it waited in."""
    for attempt in ("first", "again"):
        result = commprof(
            "run",
            "--run-id",
            f"hang-{attempt}",
            "--timeout",
            "10",
            "--quiet",
            *FIRST_STEPS,
            "--",
            str(SCRIPTS / "hangs_on_rank1.py"),
            cwd=tmp_path,
            timeout=120,
        )
        line = result.stderr.strip().splitlines()[-1]
        if PROFILER_STOP_RACE not in line:
            break
    assert result.returncode == 1
    assert run_json(tmp_path, f"hang-{attempt}")["status"] == "failed"
    # each rank's own account, written while it was stuck: where its code is and the collective it is in; rank 0's
    # all_reduce timed out after --timeout's 10 s
    failure = failure_of(tmp_path, f"hang-{attempt}")
    assert isinstance(failure, Hung) and failure.limit == Limit(10, "--timeout"), failure
    waiting = assert_rank_1_asleep_and_rank_0_in_its_all_reduce(failure.hang)
    assert at(waiting.own_frame) == ("hangs_on_rank1.py", 21, "<module>", "model(torch.randn(4, 16)).sum().backward()")
    assert line.startswith(f"error: {failure_text(failure)} (worker logs: "), line
    kept = tmp_path / "traces" / f"hang-{attempt}" / "logs"
    assert sorted(p.name for p in kept.rglob("hang_rank*.json")) == ["hang_rank0.json", "hang_rank1.json"]


@pytest.mark.takes(
    34, "the script's group would wait 10 minutes; commprof stops it after --timeout and its 15 s of grace"
)
def test_a_script_with_a_long_timeout_of_its_own_is_stopped_after_ours(tmp_path):
    """The script's process group waits 10 minutes (as Lightning's and Trainer's do); a collective that waits past
    --timeout 8 and 15 s of grace is stopped by commprof, where each rank was said, the traces kept."""
    started = time.monotonic()
    args = ["--timeout", "8", "--quiet", *TINY_SCHEDULE, "--", str(SCRIPTS / "hangs_on_rank1.py"), "10"]
    result = commprof("run", "--run-id", "own-timeout", *args, cwd=tmp_path, timeout=180)
    line = result.stderr.strip().splitlines()[-1]
    assert result.returncode == 1 and time.monotonic() - started < 8 + 15 + 60, result.stderr
    assert run_json(tmp_path, "own-timeout")["status"] == "failed"
    # commprof's deadline stopped the job: the script's own process group had not timed out (not MPI's)
    failure = failure_of(tmp_path, "own-timeout")
    assert isinstance(failure, Overdue) and (failure.timeout_s, failure.grace_s, failure.mpi) == (8, 15, False)
    assert GRACE_S == 15 and failure.host == run_json(tmp_path, "own-timeout")["hosts"][0]
    assert_rank_1_asleep_and_rank_0_in_its_all_reduce(failure.hang)
    assert line.startswith(f"error: {failure_text(failure)} (worker logs: "), line
