"""Ctrl-C and SIGTERM to a real `commprof run` (2 Gloo ranks), sent once its ranks have completed some steps: exit
130 or 143, one line on stderr, run.json "interrupted" with the steps every rank completed, the partial report in
reports/<run-id>/ and its TensorBoard event files next to the traces (traces/<run-id>/tensorboard/), which
`commprof view <run-id>` serves; a run interrupted before its profiler recorded anything says so, and so does its
`commprof view`. Synchronised on the ranks' step lines (rank<N>.steps.txt), polled with a deadline."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from commprof.render.unfinished_words import interrupted_line, nothing_to_view
from commprof.results.rank_facts import PartialReport, StepsDone
from commprof.results.store import load_report
from tests.conftest import REPO, commprof

pytestmark = pytest.mark.slow
SCRIPTS = REPO / "tests" / "data" / "scripts"
FAST = ["--schedule", "2,1,4", "--batch-size", "8"]  # profiled steps 4-7
STARTUP_ALLOWANCE = 120  # interpreter, torch import and process start on a slow shared 2-core machine
POLL_S = 0.05


def steps_done(run_dir: Path) -> int:
    """Steps every rank has completed, from their step lines (one line per step, appended as it ends)."""
    counts = [path.read_text().count("\n") for path in run_dir.glob("rank*.steps.txt")]
    return min(counts) if len(counts) == 2 else 0


def interrupted(
    tmp_path: Path, run_id: str, signum: int, args: list[str], after_steps: int, whole_group: bool
) -> tuple[int, list[str]]:
    """`commprof run` in a session of its own; once every rank completed `after_steps`, the signal: to the whole
    process group, as a terminal sends Ctrl-C, or to commprof alone, as `kill` or a batch system does."""
    process = subprocess.Popen(
        [sys.executable, "-m", "commprof", "run", "--run-id", run_id, "--quiet", *args],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    run_dir = tmp_path / "traces" / run_id
    deadline = time.monotonic() + STARTUP_ALLOWANCE
    while steps_done(run_dir) < after_steps and process.poll() is None and time.monotonic() < deadline:
        time.sleep(POLL_S)
    assert process.poll() is None, f"ended before the signal: {process.communicate()}"
    assert steps_done(run_dir) >= after_steps, f"no {after_steps} steps within {STARTUP_ALLOWANCE} s"
    if whole_group:
        os.killpg(process.pid, signum)
    else:
        process.send_signal(signum)
    _, err = process.communicate(timeout=120)
    return process.returncode, err.strip().splitlines()


def run_json(tmp_path: Path, run_id: str) -> dict:
    return json.loads((tmp_path / "traces" / run_id / "run.json").read_text())


def assert_partial_report_beside_the_run(tmp_path: Path, run_id: str, lines: list[str], of: str) -> int:
    """The one line, run.json, the report marked incomplete in reports/<run-id>/, its event files by the traces."""
    (line,) = lines
    record = run_json(tmp_path, run_id)
    assert record["status"] == "interrupted", record
    steps, page = StepsDone(record["steps_completed"], int(of)), PartialReport(Path(f"reports/{run_id}/report.html"))
    assert line == interrupted_line(Path(f"traces/{run_id}"), steps, (4, 7), page), line
    run_dir = tmp_path / "traces" / run_id
    assert sorted(p.name for p in run_dir.glob("*.pt.trace.json")) == ["rank0.pt.trace.json", "rank1.pt.trace.json"]
    assert list((run_dir / "tensorboard" / "rank0").glob("events.out.tfevents.*")), "no event files"
    assert not (tmp_path / "reports" / run_id / "tensorboard").exists()  # not in the report's folder
    report = load_report(tmp_path / "reports" / run_id)
    assert report.unfinished.status == "interrupted" and report.unfinished.error.startswith("interrupted by ")
    return steps.done


def test_ctrl_c_stops_a_built_in_run_with_130_and_its_partial_report(tmp_path):
    code, lines = interrupted(
        tmp_path, "ctrl-c", signal.SIGINT, ["--steps", "400", *FAST], after_steps=9, whole_group=True
    )
    assert code == 130, lines
    assert assert_partial_report_beside_the_run(tmp_path, "ctrl-c", lines, of="400") >= 9
    assert run_json(tmp_path, "ctrl-c")["error"] == "interrupted by SIGINT"
    assert_view_serves_the_event_files(tmp_path, "ctrl-c")


def test_an_interrupt_before_the_profiler_recorded_anything_says_so(tmp_path):
    code, lines = interrupted(tmp_path, "early", signal.SIGTERM, ["--steps", "400"], after_steps=1, whole_group=False)
    assert code == 143, lines
    (line,) = lines
    record = run_json(tmp_path, "early")
    # the steps every rank completed, all before the profiler's window (steps 8-17): no trace, no report
    window = (8, 17)
    steps = StepsDone(record["steps_completed"], 400)
    assert record["status"] == "interrupted" and 1 <= steps.done < window[0], record
    assert line == interrupted_line(Path("traces/early"), steps, window, PartialReport(None, "no_trace")), line
    assert not (tmp_path / "reports" / "early").exists()
    viewed = commprof("view", "early", cwd=tmp_path, timeout=60)
    assert viewed.returncode == 2
    (said,) = viewed.stderr.strip().splitlines()
    assert said == f"error: traces/early: {nothing_to_view('early', 'interrupted', steps, window)}", said


def assert_view_serves_the_event_files(tmp_path: Path, run_id: str) -> None:
    """`commprof view <run-id>` serves the interrupted run: its TensorBoard lists the ranks' event files."""
    process = subprocess.Popen(
        [sys.executable, "-m", "commprof", "view", run_id, "--json"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    watchdog = threading.Timer(STARTUP_ALLOWANCE, process.terminate)  # a view that never serves fails the test
    watchdog.start()
    try:
        line = process.stdout.readline()
        assert line, "commprof view printed nothing"
        url = json.loads(line)["url"]
        runs: list[str] = []
        deadline = time.monotonic() + STARTUP_ALLOWANCE
        while "tensorboard/rank0" not in runs and time.monotonic() < deadline:  # TensorBoard loads in the background
            with urllib.request.urlopen(f"{url}/data/runs", timeout=30) as response:
                runs = json.loads(response.read())
            time.sleep(POLL_S)
        assert {"tensorboard/rank0", "tensorboard/rank1", "tensorboard/job"} <= set(runs), runs
    finally:
        watchdog.cancel()
        process.terminate()
        process.wait(timeout=30)
