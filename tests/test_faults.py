"""Faults during a run: each ends with a non-zero exit in bounded time, a one-line message that
names the rank (or node) and the cause, every trace already written kept, and a report of the
completed steps marked incomplete."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from commprof.launch.runlog import read_run_json
from commprof.render.failure_words import failure_text, setup_text
from commprof.render.unfinished_words import failed_line
from commprof.results.failure_facts import (
    Behind,
    Crashed,
    Failure,
    Hung,
    Killed,
    Limit,
    OwnError,
    RendezvousFailed,
    SetupProblem,
)
from commprof.results.rank_facts import PartialReport
from commprof.results.store import load_report
from tests.conftest import REPO, commprof

FAULTY = REPO / "tests" / "data" / "faulty_model.py"
STEPS = ["--steps", "10", "--schedule", "2,1,4", "--batch-size", "8", "--quiet"]
TIMEOUT = 10
pytestmark = pytest.mark.slow  # every fault is a real run through the CLI
STARTUP_ALLOWANCE = 60  # interpreter, torch import and process start on a slow shared 2-core machine


def faulty_run(tmp_path: Path, fault: str, step: int, run_id: str) -> tuple[subprocess.CompletedProcess, float]:
    env = {**os.environ, "COMMPROF_TEST_FAULT": fault, "COMMPROF_TEST_FAULT_STEP": str(step)}
    started = time.monotonic()
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "commprof",
            "run",
            "--model",
            f"{FAULTY}:build",
            *STEPS,
            "--timeout",
            str(TIMEOUT),
            "--run-id",
            run_id,
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    return result, time.monotonic() - started


def one_line_error(result: subprocess.CompletedProcess) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


def failure_of(run_dir: Path) -> Failure:
    """The run's failure, as run.json keeps its facts."""
    record = read_run_json(run_dir)
    assert record is not None and record.failure is not None, record
    return record.failure


def said_of(line: str, failure: Failure) -> None:
    """The CLI's line is what render makes of the facts run.json keeps, then where the worker logs are."""
    assert line.startswith(f"error: {failure_text(failure)} (worker logs: "), (line, failure)


def no_partial_files(folder: Path) -> None:
    assert not [p for p in folder.rglob(".*") if p.is_file()], "temporary files left behind"
    for trace in folder.glob("*.pt.trace.json"):
        json.loads(trace.read_text())  # complete JSON: never half a file


def test_rank_killed_mid_run(tmp_path):
    # step 9 (index 8) is after the profiled steps 3-6: every trace was written before the kill
    result, seconds = faulty_run(tmp_path, "kill", 9, "killed")
    assert result.returncode == 1 and seconds < TIMEOUT + STARTUP_ALLOWANCE
    line = one_line_error(result)
    assert "rank 1 on" in line and "SIGKILL" in line, line
    run_dir = tmp_path / "traces" / "killed"
    assert sorted(p.name for p in run_dir.glob("*.pt.trace.json")) == ["rank0.pt.trace.json", "rank1.pt.trace.json"]
    no_partial_files(run_dir)
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "failed" and record["steps_completed"] == 8
    assert (record["failure"]["kind"], record["failure"]["rank"], record["failure"]["signal"]) == ("killed", 1, 9)
    report = load_report(tmp_path / "reports" / "killed" / "report.json")
    assert (report.unfinished.completed, report.unfinished.covered) == (8, (4, 7))
    assert sorted({s.step for s in report.steps}) == [f"ProfilerStep#{n}" for n in (3, 4, 5, 6)]
    assert "INCOMPLETE" in (tmp_path / "reports" / "killed" / "report.md").read_text()


def test_rank_that_crashes_is_named_with_where(tmp_path):
    result, seconds = faulty_run(tmp_path, "crash", 9, "crashed")
    assert result.returncode == 1 and seconds < TIMEOUT + STARTUP_ALLOWANCE
    line = one_line_error(result)
    # the workers enable faulthandler: the crashing frame comes from the rank's log
    # (torch reports the crashed rank's signal only when it finds that rank's exit first)
    failure = failure_of(tmp_path / "traces" / "crashed")
    assert isinstance(failure, (Killed, Crashed)) and failure.rank == 1, failure
    assert not isinstance(failure, Killed) or failure.signal == signal.SIGSEGV, failure
    assert failure.site.startswith("in string_at (ctypes/__init__.py:"), failure
    said_of(line, failure)


def test_rank_stuck_before_a_collective(tmp_path):
    # rank 1 sleeps in step index 5, inside the profiled window: rank 0 times out in the all-reduce
    result, seconds = faulty_run(tmp_path, "hang", 6, "stuck")
    assert result.returncode == 1 and seconds < TIMEOUT + STARTUP_ALLOWANCE
    line = one_line_error(result)
    run_dir = tmp_path / "traces" / "stuck"
    # rank 1 asleep in faulty_model.py after 5 steps, outside any collective; rank 0 in the default group's all_reduce
    # of one tensor of floats, called from commprof's own training loop; --timeout's 10 s fired
    failure = failure_of(run_dir)
    assert isinstance(failure, Hung) and failure.limit == Limit(TIMEOUT, "--timeout"), failure
    hang = failure.hang
    assert isinstance(hang, Behind) and hang.ahead is not None
    (behind,), (waiting,) = hang.behind, hang.waiting
    source = FAULTY.read_text().splitlines()
    asleep = next(n for n, code in enumerate(source, 1) if "time.sleep(3600" in code)
    frame = behind.own_frame
    assert (behind.rank, behind.inside, behind.steps_done) == (1, None, 5) and frame is not None
    assert (Path(frame.file).name, frame.line, frame.function) == ("faulty_model.py", asleep, "misbehave")
    assert frame.code == source[asleep - 1].strip()
    ahead = hang.ahead
    assert (ahead.op, ahead.group_desc, len(ahead.sizes), ahead.dtypes) == ("all_reduce", "default_pg", 1, ["Float"])
    assert waiting.rank == 0 and waiting.inside == ahead and waiting.own_frame is None
    assert any("/commprof/" in f.file for f in waiting.stack)  # no frame of the model's own: commprof's loop
    said_of(line, failure)
    # the stopped rank still wrote the trace it was recording
    assert sorted(p.name for p in run_dir.glob("*.pt.trace.json")) == ["rank0.pt.trace.json", "rank1.pt.trace.json"]
    no_partial_files(run_dir)
    report = load_report(tmp_path / "reports" / "stuck" / "report.json")
    assert (report.unfinished.completed, report.unfinished.covered) == (5, (4, 5))
    assert sorted({s.step for s in report.steps}) == ["ProfilerStep#3", "ProfilerStep#4"]
    assert {r.rank for r in report.ranks} == {0, 1}


def test_node_that_never_joins(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    started = time.monotonic()
    result = commprof(
        "run",
        "--nodes",
        "2",
        "--rdzv-endpoint",
        f"127.0.0.1:{port}",
        "--run-id",
        "alone",
        "--timeout",
        "5",
        *STEPS,
        cwd=tmp_path,
    )
    assert result.returncode == 1 and time.monotonic() - started < 5 + STARTUP_ALLOWANCE
    line = one_line_error(result)
    assert line == f"error: {failure_text(RendezvousFailed('timeout', f'127.0.0.1:{port}', 5, 2, 'alone'))}", line
    assert not (tmp_path / "traces" / "alone").exists()


def test_rendezvous_port_in_use(tmp_path):
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        result = commprof("run", "--rdzv-endpoint", f"127.0.0.1:{port}", "--timeout", "30", *STEPS, cwd=tmp_path)
    assert result.returncode == 2  # refused before anything is launched (launch/preflight)
    line = one_line_error(result)
    assert line == f"error: {setup_text(SetupProblem('endpoint_not_store', f'127.0.0.1:{port}'))}", line


def _unshare_works() -> bool:
    return (
        shutil.which("unshare") is not None
        and subprocess.run(["unshare", "-Urm", "true"], capture_output=True).returncode == 0
    )


@pytest.fixture
def mount_namespace():
    if not _unshare_works():
        pytest.skip("no user + mount namespaces (unshare -Urm)")


def in_mount_namespace(script: str, cwd: Path) -> subprocess.CompletedProcess:
    """Run a shell script as root of a private mount namespace: it may mount file systems."""
    return subprocess.run(
        ["unshare", "-Urm", "sh", "-c", script],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHON": sys.executable},
    )


def test_read_only_traces_folder(tmp_path, mount_namespace):
    (tmp_path / "ro").mkdir()
    result = in_mount_namespace(
        'mount --bind ro ro && mount -o remount,bind,ro ro && "$PYTHON" -m commprof run --traces-dir ro/traces --quiet',
        tmp_path,
    )
    assert result.returncode == 2
    assert one_line_error(result) == "error: ro/traces: cannot write there (Read-only file system)"


def test_traces_folder_fills_up_mid_run(tmp_path, mount_namespace):
    # 200 KiB: run.json and the step logs fit, a trace does not
    (tmp_path / "tiny").mkdir()
    result = in_mount_namespace(
        'mount -t tmpfs -o size=200k tmpfs tiny && "$PYTHON" -m commprof run '
        f"--traces-dir tiny --run-id full --timeout {TIMEOUT} {' '.join(STEPS)}; "
        "code=$?; cp -r tiny/full copy; exit $code",
        tmp_path,
    )
    assert result.returncode == 1
    line = one_line_error(result)
    copy = tmp_path / "copy"
    no_partial_files(copy)
    record = json.loads((copy / "run.json").read_text())
    assert record["status"] == "failed"
    failure = failure_of(copy)
    assert isinstance(failure, OwnError), failure
    assert "cannot write trace tiny/full/rank" in failure.message and "KiB free there" in failure.message, failure
    # the rank's error, its logs, and no partial report: no trace was written
    logs = Path("tiny/full/logs") / socket.gethostname()
    assert (
        line == f"error: {failed_line(failure_text(failure), logs, Path('tiny/full'), PartialReport(None, 'no_trace'))}"
    )


@pytest.mark.takes(40, "two whole runs at once on the two cores, one of them to its end")
def test_same_run_id_at_the_same_time_never_mixes(tmp_path):
    args = [sys.executable, "-m", "commprof", "run", "--run-id", "twice", *STEPS]
    runs = [
        subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outputs = [r.communicate(timeout=300) for r in runs]
    codes = sorted(r.returncode for r in runs)
    assert codes in ([0, 1], [0, 2]), outputs  # 2: refused before launch; 1: lost the race for the folder
    loser = outputs[[r.returncode for r in runs].index(codes[1])][1]
    assert "already exists" in loser and "never overwrites" in loser, loser
    run_dir = tmp_path / "traces" / "twice"
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "complete"
    assert sorted(p.name for p in run_dir.iterdir()) == [
        "logs",
        "rank0.groups.json",
        "rank0.ledger.json",
        "rank0.pt.trace.json",
        "rank0.steps.json",
        "rank0.steps.txt",
        "rank1.groups.json",
        "rank1.ledger.json",
        "rank1.pt.trace.json",
        "rank1.steps.json",
        "rank1.steps.txt",
        "run.json",
        "tensorboard",
    ]
    assert [p.name for p in (run_dir / "logs").iterdir()] == [socket.gethostname()]
