"""A user's script raised: its traceback, as python would show it, from the one its rank recorded (commprof's
runner frames, and runpy's, left out); none for an error commprof raised itself; the rank chosen is the one
root_cause blames. Hand-made records, no process."""

from pathlib import Path

from commprof.launch.faults import RankOutcome, first_own_failure, interrupted_by_user, root_cause
from commprof.launch.tracebacks import MAX_FRAMES, user_traceback
from commprof.results.failure_facts import OwnError

PACKAGE = Path("/opt/site/commprof")
RUNNER = [
    f'  File "{PACKAGE}/worker/script.py", line 229, in run_rank',
    "    run_script(config.script)",
    f'  File "{PACKAGE}/worker/script.py", line 213, in run_script',
    '    exec(compile(path.read_bytes(), str(path), "exec"), main.__dict__)',
]
USER = [
    '  File "/home/me/train.py", line 6, in <module>',
    '    config = load_config("missing.yaml")',
    "             ^^^^^^^^^^^^^^^^^^^^^^^^^^^",
    '  File "/home/me/train.py", line 4, in load_config',
    '    raise ValueError(f"no config at {path}")',
]
ERROR = "ValueError: no config at missing.yaml"
RUNNERS_OWN = "RuntimeError: the script exited with code 3"  # worker/script.py's, for a script that called sys.exit(3)
CAUSE = "The above exception was the direct cause of the following exception:"  # python's, between chained tracebacks


def recorded(*lines: str) -> str:
    return "\n".join(["Traceback (most recent call last):", *lines]) + "\n"


def test_the_scripts_frames_as_python_shows_them():
    shown = user_traceback(recorded(*RUNNER, *USER, ERROR), PACKAGE)
    assert shown.splitlines() == ["Traceback (most recent call last):", *USER, ERROR]


def test_a_module_run_with_dash_m_loses_runpys_frames_too():
    runpy = [
        '  File "<frozen runpy>", line 226, in run_module',
        '  File "/usr/lib/python3.11/runpy.py", line 88, in _run_code',
        "    exec(code, run_globals)",
    ]
    shown = user_traceback(recorded(*RUNNER[:2], *runpy, *USER, ERROR), PACKAGE)
    assert shown.splitlines()[1] == USER[0] and "runpy" not in shown and "commprof" not in shown


def test_frames_inside_torch_and_commprofs_hooks_below_the_script_stay():
    torch_frames = [
        '  File "/venv/lib/python3.11/site-packages/torch/optim/optimizer.py", line 500, in wrapper',
        "    post_hook(self, args, kwargs)",
        f'  File "{PACKAGE}/worker/script.py", line 120, in _after_step',
        "    raise RuntimeError('x')",
    ]
    shown = user_traceback(recorded(*RUNNER, *USER[:3], *torch_frames, "RuntimeError: x"), PACKAGE)
    assert shown.splitlines()[1:] == [*USER[:3], *torch_frames, "RuntimeError: x"]


def test_an_error_commprof_raised_has_no_traceback_to_show():
    assert user_traceback(recorded(*RUNNER[:2], RUNNERS_OWN), PACKAGE) == ""
    assert user_traceback("", PACKAGE) == ""


def test_a_chained_error_keeps_both_tracebacks_without_the_runner():
    text = (
        recorded(*USER[3:], "KeyError: 'lr'")
        + f"\n{CAUSE}\n\n"
        + recorded(*RUNNER, *USER[:3], "ValueError: bad config")
    )
    lines = user_traceback(text, PACKAGE).splitlines()
    assert lines[: len(USER[3:]) + 2] == ["Traceback (most recent call last):", *USER[3:], "KeyError: 'lr'"]
    assert CAUSE in lines
    assert lines[-4:] == [*USER[:3], "ValueError: bad config"] and "commprof" not in "\n".join(lines)


def test_a_deep_traceback_shows_its_last_frames_and_says_how_many_it_left_out():
    deep = [line for n in range(30) for line in (f'  File "/home/me/deep.py", line {n + 1}, in f{n}', "    f()")]
    lines = user_traceback(recorded(*RUNNER, *deep, "RecursionError: too deep"), PACKAGE).splitlines()
    assert lines[1] == f"  [{30 - MAX_FRAMES} earlier frames not shown: the worker logs have them]"
    first_shown = 2 * (30 - MAX_FRAMES)  # two lines a frame: where, and its source
    assert lines[2:] == [*deep[first_shown:], "RecursionError: too deep"]
    assert len([line for line in lines if line.startswith('  File "')]) == MAX_FRAMES


def test_a_syntax_error_in_the_script_shows_where():
    syntax = ['  File "/home/me/train.py", line 3', "    def f(:", "          ^", "SyntaxError: invalid syntax"]
    shown = user_traceback(recorded(*RUNNER, *syntax), PACKAGE)
    assert shown.splitlines()[1:] == syntax


def test_the_traceback_shown_is_the_blamed_ranks():
    """The first rank to fail on its own is the one whose traceback is shown; a rank stopped by the launcher, or
    whose peer went away, is never it."""
    outcomes = [
        RankOutcome(0, "RuntimeError: Connection closed by peer", 1, timestamp=5.0, traceback="peer"),
        RankOutcome(1, ERROR, 1, timestamp=4.0, traceback="own"),
        RankOutcome(2, "stopped by the launcher (SIGTERM) while still running", 1, timestamp=6.0),
    ]
    first = first_own_failure(outcomes)
    assert first is not None and (first.rank, first.traceback) == (1, "own")
    assert root_cause(outcomes, "vm") == OwnError(1, "vm", ERROR, 1)


def test_ranks_ended_by_ctrl_c_are_an_interrupt_not_a_failure():
    by_ctrl_c = [
        RankOutcome(0, "KeyboardInterrupt:", 1, timestamp=1.0),
        RankOutcome(1, "interrupted (SIGINT) while still running", 1, timestamp=1.0),
    ]
    assert interrupted_by_user(by_ctrl_c) and all(o.kind == "stopped" for o in by_ctrl_c)
    assert first_own_failure(by_ctrl_c) is None
    assert not interrupted_by_user([*by_ctrl_c, RankOutcome(2, ERROR, 1, timestamp=0.5)])


def test_commprofs_own_thread_dumps_stay_in_the_logs_and_the_scripts_words_reach_the_terminal():
    """faulthandler's stacks of every thread (a rank that crashed or was stopped) are commprof's diagnostics: read
    from the logs, never shown as the script's output. The script's traceback and the backend's words are shown."""
    from commprof.launch.script_output import the_scripts

    dump = [
        "Fatal Python error: Aborted\n",
        "Thread 0x00007fe96d9ff6c0 (most recent call first):\n",
        '  File "/venv/commprof/instrument/hang_watch.py", line 109 in _watch\n',
        "Current thread 0x00007fe98c096b80 (most recent call first):\n",
        "  <no Python frame>\n",
        "Extension modules: numpy._core._multiarray_umath, torch._C (total: 2)\n",
        "USDT:2026-11-27 23:17:14 2685:2685 SyncActivityProfilerHandler.cpp:52] profiler_start\n",
    ]
    shown = [
        "Traceback (most recent call last):\n",
        '  File "/home/u/train.py", line 13, in <module>\n',
        "terminate called after throwing an instance of 'gloo::EnforceNotMet'\n",
        "epoch 1 loss 0.25\n",
        "\n",
    ]
    assert [line for line in dump + shown if the_scripts(line)] == shown
