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
from commprof.cli.progress_lines import PREFIX, StepLines, WorkLines
from commprof.config import RunConfig
from commprof.launch.progress import Progress, read_progress, ticking, write_progress
from commprof.render import progress_words as words

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


def said(text: str) -> str:
    """A line as a log gets it. What the lines say, given their values: tests/test_render_progress.py."""
    return PREFIX + text


def took_s(line: str) -> int:
    """The time a launch's last line gives (its last word, h:mm:ss), in seconds."""
    hours, minutes, seconds = map(int, line.rsplit(" ", 1)[1].split(":"))
    return 3600 * hours + 60 * minutes + seconds


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
        said(words.starting()),
        said(words.starting(10)),
        said(words.at_step(0, "training", 1, 20, 90.0)),
        said(words.at_step(0, "training", 12, 20, 85.3, eta_s=(20 - 12) * (21 - 11) / (12 - 1))),  # 7.3 s
        said(words.at_step(0, "writing traces", 20, 20, 80.0)),
        said(words.launch_ended(33, False, 0, 20, 20)),
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
        said(words.at_step(0, "warmup bucket-1mb", 1, 60, 100.0)),
        said(words.at_step(0, "repeat 1/5 bucket-1mb", 2, 60, 100.0, eta_s=(60 - 2) * 1.0)),  # a step a second
        said(words.at_step(0, "repeat 3/5 bucket-25mb", 40, 60, 100.0, eta_s=(60 - 40) * (12 - 1) / (40 - 1))),
    ]


def test_each_launch_of_a_sweep_names_its_setting_and_repeat_on_every_line():
    """A script's tune launches it many times: each launch's lines say which setting and which repeat."""
    lines: list[str] = []
    clock = FakeClock()
    subject = "bucket-5mb, repeat 2/5"
    view = StepLines(lines.append, clock, subject=subject)
    view.start()
    clock.now = 1
    view.show(Progress(1, 8, 50.0))
    clock.now = 2
    view.end(Progress(8, 8, 50.0), failed=False)
    texts = [words.starting(), words.at_step(0, "training", 1, 8, 50.0), words.launch_ended(2, False, 0, 8, 8)]
    assert lines == [said(f"{subject}: {text}") for text in texts]


def test_a_stalled_rank_0_is_said_to_be_stalled_not_shown_on_its_last_line_again():
    """Rank 0 finished step 15 and then no other for 25 s (a rank it waits for is stuck): the lines say how long, and
    from when; a slow step (5 s a step) is not a stall until five of them have gone by."""
    view, lines, clock = step_lines()
    for t, step in [(1, 14), (2, 15), (12, 15), (27, 15), (28, 16)]:
        clock.now = t
        view.show(Progress(step, 40, 1164.2, "profiling"))
    # still since t=2, when it reached step 15: at t=12 and t=27; at t=28 it steps again, 1 s after the last line
    assert lines[1:] == [said(words.stalled(0, None, "profiling", 15, 40, 1164.2, still_s)) for still_s in (10, 25)]
    view, lines, clock = step_lines()
    for t in (1, 12, 22):  # 21 s: not yet five of its 5 s steps
        clock.now = t
        view.show(Progress(3, 40, 5000.0))
    assert lines[-1] == said(words.at_step(0, "training", 3, 40, 5000.0))
    view, lines, clock = step_lines()
    for t in (1, 30):  # every step done: the traces take their time, nothing is stalled
        clock.now = t
        view.show(Progress(20, 20, 80.0, "writing traces"))
    assert lines[-1] == said(words.at_step(0, "writing traces", 20, 20, 80.0))


def test_a_stall_says_where_the_ranks_are_once_they_have_written_it(tmp_path):
    """The ranks' accounts of the stall, in the progress file's folder where the launch tells them to write: the
    stalled line says where each is (what launch/hang_evidence makes of them), and nothing before they exist."""
    from commprof.cli.progress import hang_text_in
    from commprof.instrument.hang_watch import HangWatch
    from commprof.launch.hang_evidence import describe_hang
    from commprof.render.hang_words import hang_text
    from commprof.results.hang import read_evidence

    lines: list[str] = []
    clock = FakeClock()
    view = StepLines(lines.append, clock, hang=lambda: hang_text_in(tmp_path))
    for t in (1, 2, 12):
        clock.now = t
        view.show(Progress(15, 40, 80.0))
    assert lines[-1] == said(words.stalled(0, None, "training", 15, 40, 80.0, 11))  # no account yet: no "where"
    HangWatch(tmp_path, 1, timeout_s=10, collectives=list).write(12.0)  # this test's own stack, no collective
    clock.now = 22
    view.show(Progress(15, 40, 80.0))
    evidence = read_evidence(tmp_path)
    (account,) = evidence.values()
    frame = account.own_frame
    assert (account.rank, account.steps_done, account.inside) == (1, 0, None)
    assert frame is not None and Path(frame.file).name == Path(__file__).name and frame.code.startswith("HangWatch(")
    assert frame.function == "test_a_stall_says_where_the_ranks_are_once_they_have_written_it"
    hang = describe_hang(evidence)
    assert hang is not None
    assert lines[-1] == said(words.stalled(0, None, "training", 15, 40, 80.0, 21, hang_text(hang)))


def test_a_script_of_unknown_length_counts_up_and_ends_on_the_steps_run():
    view, lines, clock = step_lines()
    clock.now = 2
    view.show(Progress(119, None, 2.0))
    clock.now = 5
    view.end(Progress(160, 160, 1.9), failed=False)
    assert lines == [
        said(words.at_step(0, "training", 119, None, 2.0)),
        said(words.launch_ended(5, False, 0, 160, 160)),
    ]
    view, lines, clock = step_lines()
    view.end(Progress(160, None, 1.9), failed=False)  # an older worker's last state: the steps run are the total
    assert lines == [said(words.launch_ended(0, False, 0, 160, 160))]


def test_a_failed_launch_says_where_it_stopped():
    view, lines, clock = step_lines()
    clock.now = 5
    view.end(Progress(3, 20, 80.0), failed=True)
    view.end(Progress(3, None, 80.0), failed=True)
    view.end(None, failed=True)
    view.end(None, failed=False)
    assert lines == [
        said(words.launch_ended(5, True, 0, 3, 20)),
        said(words.launch_ended(5, True, 0, 3, None)),  # failed: the total stays unknown
        said(words.launch_ended(5, True)),  # no state written: rank 0 took no step
        said(words.launch_ended(5, False)),
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
    note = "run r: mlp-small on 2 cpu rank(s), gloo, bucket_cap_mb=25 [bold]not markup[/]"
    feedback.info(note)
    with feedback.watch(path, 20):
        write_progress(path, Progress(20, 20, 80.0, "writing traces"))
        clock.now = 9
    assert log.file.getvalue().splitlines() == [  # type: ignore[attr-defined]
        note,  # as given, its brackets not read as markup
        said(words.starting()),
        said(words.launch_ended(9, False, 0, 20, 20)),
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
    files = "analysing trace files"
    short = WorkLines(files, lines.append, clock)
    clock.now = 3
    short.tick()
    short.update(8, 8)
    short.end()
    assert lines == []  # short work: no line at all

    long = WorkLines(files, lines.append, clock)
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
    assert lines == [  # started at 3 s
        said(words.work_so_far(files, 10)),
        said(words.work_count(files, 2, 8, 2 / 20, eta_s=(8 - 2) * 20 / 2)),  # 2 done in 20 s, 6 to go
        said(words.work_ended(files, 22, (8, 8))),
    ]

    bench = "bench: gloo on 2 ranks"
    work = WorkLines(bench, lines.append, clock)
    clock.now = 36
    work.tick()
    work.end()
    assert lines[3:] == [said(words.work_so_far(bench, 11)), said(words.work_ended(bench, 11))]  # nothing counted


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
    assert lines[0] == said(words.starting()), result.stderr
    assert lines[-1] == said(words.launch_ended(took_s(lines[-1]), False, 0, 9, 9)), result.stderr


def test_a_capped_script_in_a_log_ends_on_the_steps_it_ran(capped_script_run):
    """The shared run of a script, --max-steps 8: the last line counts the steps run (before: '1/20' at --max-steps
    20). A script run to its own end: tests/test_script_runs.py::test_a_script_runs_to_its_own_end_with_its_own_buckets;
    --quiet on a script: test_optimizer_steps_are_steps_under_accumulation_and_a_grad_scaler."""
    _, capped = capped_script_run
    assert capped.returncode == 0, capped.stderr
    lines = progress_lines(capped.stderr)
    assert lines[0] == said(words.starting()), capped.stderr
    assert lines[-1] == said(words.launch_ended(took_s(lines[-1]), False, 0, 8, 8)), lines


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
    assert lines[-1] == said(words.stalled(1, "node1", "training", 31, 200, 80.0, 12))
    view.end(Progress(31, 200, 80.0, "training", rank=1, host="node1"), failed=True)
    assert lines[-1] == said(words.launch_ended(13, True, 1, 31, 200))


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
    """Issue 53: a script with a syntax error first showed "training: step 0, 0.0 ms per step". The words of step 0:
    tests/test_render_progress.py::test_a_rank_that_has_done_no_step_gives_no_step_time."""
    view, lines, clock = step_lines()
    view.show(Progress(0, None, 0.0))
    clock.now = 30.0
    view.show(Progress(0, None, 0.0))
    assert lines == [
        said(words.at_step(0, "training", 0, None, 0.0)),
        said(words.stalled(0, None, "training", 0, None, 0.0, 30)),
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
