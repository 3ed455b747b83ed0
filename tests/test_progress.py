"""Progress on stderr: a terminal's bar ends on the steps really run, a log gets plain lines (one when a phase
starts, one at least every 10 s, the final count), --quiet gets nothing. No process is started: the progress
file is written here, the clock is a fake one, and the poller's interval is an hour, so that only the final read,
after the block, sees what was written inside it (as when a launch ends before the next poll)."""

from __future__ import annotations

import io
import re
import threading
from pathlib import Path

import pytest
import torch
from rich.console import Console

from commprof.cli.progress import ConsoleFeedback, StepsBar, watch_steps
from commprof.cli.progress_lines import StepLines, WorkLines, duration
from commprof.config import RunConfig
from commprof.launch.progress import Progress, read_progress, ticking, write_progress

NEVER = 3600.0  # a poll interval no test outlives: the thread polls only if the test hangs


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def step_lines() -> tuple[StepLines, list[str], FakeClock]:
    lines: list[str] = []
    clock = FakeClock()
    return StepLines(lines.append, clock), lines, clock


def test_duration():
    assert [duration(s) for s in (0, 7.4, 7.6, 65, 3723, -1)] == [
        "0:00:00",
        "0:00:07",
        "0:00:08",
        "0:01:05",
        "1:02:03",
        "0:00:00",
    ]


def test_a_log_gets_a_line_per_phase_one_every_10_s_and_the_final_count():
    view, lines, clock = step_lines()
    shown = []

    def at(t: float, state: Progress | None) -> None:
        clock.now = t
        before = len(lines)
        view.show(state)
        shown.extend(lines[before:])

    view.start()
    at(4, None)  # ranks starting: nothing yet
    at(10, None)
    at(11, Progress(1, 20, 90.0))  # a first step: no pace yet, no ETA
    at(15, Progress(5, 20, 85.0))  # 4 s after the last line: nothing
    at(21, Progress(12, 20, 85.3))  # 10 s: (21 - 11) / 11 steps, 8 to go
    at(22, Progress(20, 20, 80.0, "writing traces"))  # a new phase at once
    at(31, Progress(20, 20, 80.0, "writing traces"))
    clock.now = 33
    view.end(Progress(20, 20, 80.0, "writing traces"), failed=False)
    assert lines == [
        "commprof: starting ranks",
        "commprof: starting ranks, 0:00:10 so far",
        "commprof: rank 0 training: step 1/20, 90.0 ms per step",
        "commprof: rank 0 training: step 12/20, 85.3 ms per step, ETA 0:00:07",
        "commprof: rank 0 writing traces: step 20/20, 80.0 ms per step",
        "commprof: rank 0 done: 20/20 steps in 0:00:33",
    ]


def test_a_phase_seen_before_waits_for_the_10_s():
    """A sweep's settings take turns (warm-up, repeat, warm-up again...): a line when a phase first begins only."""
    view, lines, clock = step_lines()
    for t, phase in [(1, "warmup bucket-1mb"), (2, "repeat 1/5 bucket-1mb"), (3, "warmup bucket-25mb"), (4, "repeat")]:
        clock.now = t
        view.show(Progress(t, 60, 100.0, phase))
    clock.now = 12
    view.show(Progress(40, 60, 100.0, "repeat 3/5 bucket-25mb"))
    assert lines == [
        "commprof: rank 0 warmup bucket-1mb: step 1/60, 100.0 ms per step",
        "commprof: rank 0 repeat 1/5 bucket-1mb: step 2/60, 100.0 ms per step, ETA 0:00:58",
        "commprof: rank 0 repeat 3/5 bucket-25mb: step 40/60, 100.0 ms per step, ETA 0:00:06",
    ]


def test_each_launch_of_a_sweep_names_its_setting_and_repeat_on_every_line():
    """A script's tune launches it many times: each launch's lines say which setting and which repeat."""
    lines: list[str] = []
    clock = FakeClock()
    view = StepLines(lines.append, clock, subject="bucket-5mb, repeat 2/5")
    view.start()
    clock.now = 1
    view.show(Progress(1, 8, 50.0))
    clock.now = 2
    view.end(Progress(8, 8, 50.0), failed=False)
    assert lines == [
        "commprof: bucket-5mb, repeat 2/5: starting ranks",
        "commprof: bucket-5mb, repeat 2/5: rank 0 training: step 1/8, 50.0 ms per step",
        "commprof: bucket-5mb, repeat 2/5: rank 0 done: 8/8 steps in 0:00:02",
    ]


def test_a_stalled_rank_0_is_said_to_be_stalled_not_shown_on_its_last_line_again():
    """Rank 0 finished step 15 and then no other for 25 s (a rank it waits for is stuck): the lines say how long, and
    from when; a slow step (5 s a step) is not a stall until five of them have gone by."""
    view, lines, clock = step_lines()
    for t, step in [(1, 14), (2, 15), (12, 15), (27, 15), (28, 16)]:
        clock.now = t
        view.show(Progress(step, 40, 1164.2, "profiling"))
    assert lines[1:] == [
        "commprof: rank 0 has finished no step for 0:00:10, since step 15/40 (profiling, 1164.2 ms per step before): "
        "it, or a rank it waits for, is stuck or slow",
        "commprof: rank 0 has finished no step for 0:00:25, since step 15/40 (profiling, 1164.2 ms per step before): "
        "it, or a rank it waits for, is stuck or slow",
    ]
    view, lines, clock = step_lines()
    for t in (1, 12, 22):  # 21 s: not yet five of its 5 s steps
        clock.now = t
        view.show(Progress(3, 40, 5000.0))
    assert lines[-1] == "commprof: rank 0 training: step 3/40, 5000.0 ms per step"
    view, lines, clock = step_lines()
    for t in (1, 30):  # every step done: the traces take their time, nothing is stalled
        clock.now = t
        view.show(Progress(20, 20, 80.0, "writing traces"))
    assert lines[-1] == "commprof: rank 0 writing traces: step 20/20, 80.0 ms per step"


def test_a_stall_says_where_the_ranks_are_once_they_have_written_it(tmp_path):
    """The ranks' accounts of the stall, in the progress file's folder where the launch tells them to write: the
    stalled line says where each is (what launch/hang_evidence makes of them), and nothing before they exist."""
    from commprof.cli.progress import hang_text_in
    from commprof.instrument.hang_watch import HangWatch

    lines: list[str] = []
    clock = FakeClock()
    view = StepLines(lines.append, clock, hang=lambda: hang_text_in(tmp_path))
    for t in (1, 2, 12):
        clock.now = t
        view.show(Progress(15, 40, 80.0))
    assert lines[-1].endswith("it, or a rank it waits for, is stuck or slow")
    HangWatch(tmp_path, 1, timeout_s=10, collectives=list).write(12.0)  # this test's own stack, no collective
    clock.now = 22
    view.show(Progress(15, 40, 80.0))
    assert re.search(
        r"is stuck or slow; rank 1 is at test_progress\.py:\d+ in test_a_stall_says_where_the_ranks_are_once_they_"
        r"have_written_it \(HangWatch\(.*\), outside any collective, after step 0$",
        lines[-1],
    ), lines[-1]


def test_a_script_of_unknown_length_counts_up_and_ends_on_the_steps_run():
    view, lines, clock = step_lines()
    clock.now = 2
    view.show(Progress(119, None, 2.0))
    clock.now = 5
    view.end(Progress(160, 160, 1.9), failed=False)
    assert lines == [
        "commprof: rank 0 training: step 119, 2.0 ms per step",
        "commprof: rank 0 done: 160/160 steps in 0:00:05",
    ]
    view, lines, clock = step_lines()
    view.end(Progress(160, None, 1.9), failed=False)  # an older worker's last state: the steps run are the total
    assert lines == ["commprof: rank 0 done: 160/160 steps in 0:00:00"]


def test_a_failed_launch_says_where_it_stopped():
    view, lines, clock = step_lines()
    clock.now = 5
    view.end(Progress(3, 20, 80.0), failed=True)
    view.end(Progress(3, None, 80.0), failed=True)
    view.end(None, failed=True)
    view.end(None, failed=False)
    assert lines == [
        "commprof: rank 0 stopped at step 3/20, after 0:00:05",
        "commprof: rank 0 stopped at step 3, after 0:00:05",
        "commprof: stopped before rank 0's first step, after 0:00:05",
        "commprof: done in 0:00:05",
    ]


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def start(self) -> None:
        self.calls.append(("start",))

    def show(self, state: Progress | None) -> None:
        self.calls.append(("show", state))

    def end(self, state: Progress | None, failed: bool) -> None:
        self.calls.append(("end", state, failed))


def test_the_view_ends_on_the_last_state_written_not_the_last_polled(tmp_path):
    """The cause of '17/20 at the end of a complete run': polling stopped before rank 0's last write."""
    path = tmp_path / "progress.json"
    view = Recorder()
    with watch_steps(path, view, interval_s=NEVER):
        write_progress(path, Progress(17, 20, 80.0))
        write_progress(path, Progress(20, 20, 80.0, "writing traces"))
    assert view.calls == [("start",), ("end", Progress(20, 20, 80.0, "writing traces"), False)]


def test_a_failed_launch_ends_the_view_as_failed_and_raises(tmp_path):
    path = tmp_path / "progress.json"
    view = Recorder()
    with pytest.raises(KeyboardInterrupt), watch_steps(path, view, interval_s=NEVER):
        write_progress(path, Progress(3, 20, 80.0))
        raise KeyboardInterrupt
    assert view.calls == [("start",), ("end", Progress(3, 20, 80.0), True)]


def test_ticking_calls_on_its_thread_until_the_block_ends():
    ticked = threading.Event()
    calls = []

    def tick() -> None:
        calls.append(threading.current_thread())
        ticked.set()

    with ticking(tick, 0.001):
        assert ticked.wait(timeout=30)
    assert calls and threading.current_thread() not in calls
    assert not calls[0].is_alive()  # stopped and joined when the block ended: no tick after it


def terminal() -> Console:
    return Console(file=io.StringIO(), force_terminal=True, width=100, color_system=None)


def last_frame(console: Console) -> str:
    """The bar's last drawing, without the codes that move the cursor."""
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", console.file.getvalue())  # type: ignore[attr-defined]
    return [line.strip() for line in re.split(r"[\r\n]", text) if "rank 0" in line][-1]


def bar_of(console: Console, steps: int | None, written: list[Progress], tmp_path: Path) -> StepsBar:
    path = tmp_path / "progress.json"
    bar = StepsBar(console, steps)
    with watch_steps(path, bar, interval_s=NEVER):
        for state in written:
            write_progress(path, state)
    return bar


def test_the_bar_of_a_complete_run_ends_at_its_steps(tmp_path):
    console = terminal()
    bar = bar_of(console, 20, [Progress(17, 20, 80.0), Progress(20, 20, 80.0, "writing traces")], tmp_path)
    (task,) = bar.progress.tasks
    assert (task.description, task.completed, task.total) == ("rank 0 done", 20, 20)
    assert re.fullmatch(r"rank 0 done ━{40} 20/20 step 80\.0 ms \d:\d\d:\d\d", last_frame(console)), last_frame(console)


def test_the_bar_of_a_script_ends_at_the_steps_it_ran(tmp_path):
    """The cause of '119/119 for a run of 160 steps': a total taken from the schedule, and no last write."""
    console = terminal()
    bar = bar_of(console, None, [Progress(119, None, 2.0), Progress(160, 160, 1.9)], tmp_path)
    (task,) = bar.progress.tasks
    assert (task.description, task.completed, task.total) == ("rank 0 done", 160, 160)
    assert " 160/160 step 1.9 ms " in last_frame(console)


def test_the_bar_of_a_failed_run_stays_where_rank_0_stopped(tmp_path):
    path = tmp_path / "progress.json"
    bar = StepsBar(terminal(), 20)
    with pytest.raises(RuntimeError), watch_steps(path, bar, interval_s=NEVER):
        write_progress(path, Progress(3, 20, 80.0))
        raise RuntimeError("rank 1 failed")
    (task,) = bar.progress.tasks
    assert (task.description, task.completed, task.total) == ("rank 0 training", 3, 20)


def test_a_log_gets_plain_lines_and_no_control_codes(tmp_path):
    log = Console(file=io.StringIO(), width=40)  # a file: not a terminal
    clock = FakeClock()
    feedback = ConsoleFeedback(False, log, clock, interval_s=NEVER)
    path = tmp_path / "progress.json"
    feedback.info("run r: mlp-small on 2 cpu rank(s), gloo, bucket_cap_mb=25 [bold]not markup[/]")
    with feedback.watch(path, 20):
        write_progress(path, Progress(20, 20, 80.0, "writing traces"))
        clock.now = 9
    assert log.file.getvalue().splitlines() == [  # type: ignore[attr-defined]
        "run r: mlp-small on 2 cpu rank(s), gloo, bucket_cap_mb=25 [bold]not markup[/]",
        "commprof: starting ranks",
        "commprof: rank 0 done: 20/20 steps in 0:00:09",
    ]


def test_quiet_prints_nothing_anywhere(tmp_path):
    for console in (Console(file=io.StringIO()), terminal()):
        feedback = ConsoleFeedback(True, console, FakeClock(), interval_s=NEVER)
        path = tmp_path / "progress.json"
        feedback.info("a note")
        with feedback.watch(path, 20):
            write_progress(path, Progress(20, 20, 80.0))
        with feedback.status("bench: gloo on 2 ranks"):
            pass
        with feedback.counter("analysing trace files") as advance:
            advance(1, 2)
        assert console.file.getvalue() == ""  # type: ignore[attr-defined]


def test_work_without_steps_in_a_log():
    lines: list[str] = []
    clock = FakeClock()
    short = WorkLines("analysing trace files", lines.append, clock)
    clock.now = 3
    short.tick()
    short.update(8, 8)
    short.end()
    assert lines == []  # short work: no line at all

    long = WorkLines("analysing trace files", lines.append, clock)
    clock.now = 13
    long.tick()  # nothing done yet
    long.update(2, 8)
    clock.now = 20
    long.tick()  # 7 s after the last line
    clock.now = 23
    long.tick()
    long.update(8, 8)
    clock.now = 25
    long.end()
    assert lines == [
        "commprof: analysing trace files, 0:00:10 so far",
        "commprof: analysing trace files: 2/8, 0.1/s, ETA 0:01:00",
        "commprof: analysing trace files: 8/8 in 0:00:22",
    ]

    bench = WorkLines("bench: gloo on 2 ranks", lines.append, clock)
    clock.now = 36
    bench.tick()
    bench.end()
    assert lines[3:] == [
        "commprof: bench: gloo on 2 ranks, 0:00:11 so far",
        "commprof: bench: gloo on 2 ranks: done in 0:00:11",
    ]


@pytest.fixture
def script_session(tmp_path, monkeypatch):
    """One rank of a user's script as the worker sees it, without the script or a process group: its steps are
    optimizer steps made here."""
    from commprof.worker.script_session import ScriptSession

    for name, value in {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(
        "commprof.worker.script_session.device_name", lambda device: "cpu"
    )  # platform's runs `uname -p`

    def make(max_steps: int | None) -> tuple[ScriptSession, Path, torch.optim.Optimizer]:
        config = RunConfig(run_id="s", script=("train.py",), traces_dir=tmp_path, max_steps=max_steps, profiled=False)
        config.run_dir.mkdir(parents=True, exist_ok=True)
        optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
        return ScriptSession(config, tmp_path / "progress.json"), tmp_path / "progress.json", optimizer

    return make


def test_a_script_at_max_steps_writes_its_final_count(script_session):
    from commprof.worker.script_session import MaxStepsReached

    session, path, optimizer = script_session(20)
    with pytest.raises(MaxStepsReached):
        for _ in range(21):
            session._after_step(optimizer)
    session.finish()
    state = read_progress(path)
    assert state is not None and (state.step, state.steps) == (20, 20)


def test_a_script_that_ends_by_itself_writes_the_steps_it_ran(script_session):
    session, path, optimizer = script_session(None)
    for _ in range(160):
        session._after_step(optimizer)
    state = read_progress(path)
    assert state is not None and state.steps is None  # while it runs, its length is not known
    session.finish()
    state = read_progress(path)
    assert state is not None and (state.step, state.steps) == (160, 160)


def test_a_failed_script_writes_the_steps_it_ran_of_those_asked(script_session):
    session, path, optimizer = script_session(20)
    for _ in range(3):
        session._after_step(optimizer)
    session.finish(ended=False)
    state = read_progress(path)
    assert state is not None and (state.step, state.steps) == (3, 20)


def progress_lines(stderr: str) -> list[str]:
    assert "\x1b" not in stderr and "━" not in stderr, stderr  # a pipe: no control codes, no bar
    return [line for line in stderr.splitlines() if line.startswith("commprof: ")]


def test_a_real_run_in_a_log_ends_on_its_steps(cpu_run):
    _, result = cpu_run
    lines = progress_lines(result.stderr)
    assert lines[0] == "commprof: starting ranks" and re.fullmatch(
        r"commprof: rank 0 done: 9/9 steps in \d:\d\d:\d\d", lines[-1]
    ), result.stderr


def test_a_capped_script_in_a_log_ends_on_the_steps_it_ran(capped_script_run):
    """The shared run of a script, --max-steps 8: the last line counts the steps run (before: '1/20' at --max-steps
    20). A script run to its own end: tests/test_script_runs.py::test_a_script_runs_to_its_own_end_with_its_own_buckets;
    --quiet on a script: test_optimizer_steps_are_steps_under_accumulation_and_a_grad_scaler."""
    _, capped = capped_script_run
    assert capped.returncode == 0, capped.stderr
    lines = progress_lines(capped.stderr)
    assert lines[0] == "commprof: starting ranks", capped.stderr
    assert re.fullmatch(r"commprof: rank 0 done: 8/8 steps in \d:\d\d:\d\d", lines[-1]), lines


def test_progress_says_profiling_only_for_the_steps_the_profiler_traces():
    """--schedule 5,2,10: steps 1-5 train, 6-17 are traced (warm-up and recorded), 18 on train again."""
    from commprof.config import ProfileSchedule

    schedule = ProfileSchedule(5, 2, 10)
    assert [schedule.phase(step) for step in (1, 5, 6, 17, 18)] == [
        "training",
        "training",
        "profiling",
        "profiling",
        "training",
    ]


def test_a_stall_names_the_rank_by_its_global_number_and_its_host():
    """Each node's local rank 0 writes the progress: on the second host that is rank 1 of node1, and the line says
    so, not 'rank 0'."""
    view, lines, clock = step_lines()
    for t in (1, 2, 13):
        clock.now = t
        view.show(Progress(31, 200, 80.0, "training", rank=1, host="node1"))
    assert lines[-1].startswith("commprof: rank 1 on node1 has finished no step for 0:00:12, since step 31/200")
    view.end(Progress(31, 200, 80.0, "training", rank=1, host="node1"), failed=True)
    assert lines[-1].startswith("commprof: rank 1 stopped at step 31/200")


def test_a_rank_that_stops_stepping_writes_the_step_it_really_finished(tmp_path):
    """The progress file is rewritten at most every quarter second while the rank steps, so it can lag; once the rank
    has not stepped for a second, its hang watch has it written with the step it really finished."""
    import threading

    from commprof.instrument.hang_watch import IDLE_S, HangWatch

    said = threading.Event()
    watch = HangWatch(tmp_path, 0, timeout_s=300, collectives=list, idle=said.set)
    watch.start()
    assert not said.wait(IDLE_S + 0.5)  # before a first step there is nothing to say
    watch.stepped()
    assert said.wait(10)


def test_a_rank_that_has_done_no_step_gives_no_step_time():
    """Issue 53: a script with a syntax error first showed "training: step 0, 0.0 ms per step"."""
    view, lines, clock = step_lines()
    view.show(Progress(0, None, 0.0))
    clock.now = 30.0
    view.show(Progress(0, None, 0.0))
    assert lines == [
        "commprof: rank 0 training: no step done yet",
        "commprof: rank 0 has finished no step for 0:00:30, since it started (training): it, or a rank it waits "
        "for, is stuck or slow",
    ]


def test_commprofs_own_ticks_run_at_the_lowest_priority():
    """The live view and the progress line tick on a thread of nice 19: their reads took a core from two ranks for
    0.1 s, a burst in the run's steps."""
    import os

    seen: list[int] = []
    ticked = threading.Event()

    def tick() -> None:
        seen.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
        ticked.set()

    with ticking(tick, 0.01):
        assert ticked.wait(10)
    assert seen[0] == 19 and os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) != 19  # the caller's: as it was
