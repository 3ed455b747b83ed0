"""A run that did not complete, without a process: run.json marked interrupted, the one line an interrupt or a
failure ends with, the exit codes (130 for SIGINT, 143 for SIGTERM), and `commprof view` of a run that recorded
nothing. The real launches are in test_interrupt_runs.py and test_script_failures.py."""

import json
import signal
from pathlib import Path

import pytest

from commprof.cli.app import main
from commprof.commands.unfinished import failed_run, interrupted_run, steps_done
from commprof.commands.view import tensorboard
from commprof.config import ProfileSchedule, RunConfig
from commprof.errors import Interrupted, RunFailed, UsageError
from commprof.launch.runlog import mark_failed, mark_interrupted, read_run_json, write_run_json
from commprof.render.failure_words import error_text, failure_text
from commprof.render.unfinished_words import failed_line, interrupted_line, nothing_to_view, raised_line
from commprof.results.failure_facts import Killed, OwnError, Raised
from commprof.results.rank_facts import PartialReport, Refused, StepsDone
from commprof.results.run_record import RUN_STATUSES, RunRecord

BUILT_IN = RunConfig(run_id="r", steps=200, schedule=ProfileSchedule(5, 2, 10))


def started_run(tmp_path: Path, config: RunConfig = BUILT_IN, steps: tuple[int, ...] = (3, 4)) -> Path:
    """A run folder as its ranks leave it when stopped: run.json "running", step lines, no trace."""
    run_dir = tmp_path / "traces" / config.run_id
    run_dir.mkdir(parents=True)
    write_run_json(run_dir, RunRecord(run_id=config.run_id, config=config, world_size=len(steps)))
    for rank, done in enumerate(steps):
        (run_dir / f"rank{rank}.steps.txt").write_text("".join(f"{10.0 + i}\n" for i in range(done)))
        (run_dir / f"rank{rank}.steps.json").write_text(
            json.dumps({"rank": rank, "host": "a", "steps_done": 0, "step_ms": []})
        )
    return run_dir


def test_an_interrupted_run_says_so_in_run_json_with_the_steps_every_rank_completed(tmp_path):
    run_dir = started_run(tmp_path)
    mark_interrupted(run_dir, "interrupted by SIGTERM")
    record = read_run_json(run_dir)
    assert record is not None and record.status == "interrupted" and record.status in RUN_STATUSES
    assert (record.error, record.steps_completed, record.steps_done_by_rank) == (
        "interrupted by SIGTERM",
        3,
        {"0": 3, "1": 4},
    )


def test_a_run_that_completed_before_the_interrupt_stays_complete(tmp_path):
    run_dir = started_run(tmp_path)
    write_run_json(run_dir, RunRecord(run_id="r", config=BUILT_IN, status="complete", steps_completed=200))
    mark_interrupted(run_dir, "interrupted by SIGINT")
    assert read_run_json(run_dir).status == "complete"
    stop = interrupted_run(Interrupted(signal.SIGINT, "interrupted (SIGINT)", run_dir), BUILT_IN)
    # steps None: the ranks had finished; no partial report of a complete run
    assert stop.message == interrupted_line(run_dir, None, BUILT_IN.schedule.profiled_steps, PartialReport(None))


def test_the_steps_done_count_what_every_rank_completed_of_the_runs_length():
    assert steps_done(BUILT_IN, 12) == StepsDone(12, 200)
    script = RunConfig(run_id="s", script=("train.py",))
    assert steps_done(script, 12) == StepsDone(12, None)  # a script without --max-steps has no known length
    assert steps_done(RunConfig(run_id="s", script=("train.py",), max_steps=50), 12) == StepsDone(12, 50)
    assert BUILT_IN.schedule.profiled_steps == (8, 17)


def test_an_interrupt_before_the_profilers_window_says_there_is_nothing_to_report(tmp_path):
    run_dir = started_run(tmp_path)
    mark_interrupted(run_dir, "interrupted by SIGINT")
    config = RunConfig(run_id="r", steps=200, reports_dir=tmp_path / "reports")
    stop = interrupted_run(Interrupted(signal.SIGINT, "interrupted (SIGINT)", run_dir), config)
    assert (stop.exit_code, stop.run_dir) == (130, run_dir)
    # 3 steps on every rank, of 200, before the profiler's window (steps 8-17): no trace, so no partial report
    no_trace = PartialReport(None, "no_trace")
    assert stop.message == interrupted_line(run_dir, StepsDone(3, 200), (8, 17), no_trace)
    assert not (tmp_path / "reports").exists()


def test_an_interrupt_of_a_launch_that_started_no_run_folder_keeps_its_line():
    stop = Interrupted(signal.SIGTERM, "interrupted (SIGTERM)")
    assert interrupted_run(stop, BUILT_IN) is stop and stop.exit_code == 143


def test_a_scripts_failure_says_when_and_what_to_do_once(tmp_path):
    run_dir = started_run(tmp_path, RunConfig(run_id="s", script=("train.py",)), steps=(0, 0))
    mark_failed(run_dir, OwnError(1, "vm", "ValueError: x", 1))  # as the launcher does
    failure = RunFailed(Raised(1, "vm"), run_dir, run_dir / "logs" / "vm", "Traceback ...")
    explained = failed_run(failure, RunConfig(run_id="s", script=("train.py",), reports_dir=tmp_path / "reports"))
    # before the first step (0 done, of a script's own length); no trace, no partial report to name
    raised = failure_text(Raised(1, "vm"))
    no_trace = PartialReport(None, "no_trace")
    assert str(explained) == raised_line(raised, StepsDone(0, None), None, run_dir / "logs" / "vm", no_trace)
    assert explained.traceback == "Traceback ..." and explained.exit_code == 1


def test_a_failure_without_a_trace_says_so_once(tmp_path):
    run_dir = started_run(tmp_path)
    killed = Killed(1, "vm", signal.SIGKILL)
    line = str(failed_run(RunFailed(killed, run_dir, run_dir / "logs" / "vm"), BUILT_IN))
    no_trace = PartialReport(None, "no_trace")
    assert line == failed_line(failure_text(killed), run_dir / "logs" / "vm", run_dir, no_trace)


def run_main(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    return exit_info.value.code, capsys.readouterr().err


@pytest.mark.parametrize(
    "raised, code, line",
    [
        (Interrupted(signal.SIGTERM, "interrupted at step 2 of 20; partial report: x.html"), 143, None),
        (Interrupted(signal.SIGINT, "interrupted at step 2 of 20"), 130, None),
        (KeyboardInterrupt(), 130, "interrupted"),
    ],
)
def test_an_interrupt_is_one_line_and_128_plus_the_signal(raised, code, line, monkeypatch, capsys):
    import commprof.commands.run

    def interrupted(*args, **kwargs):
        raise raised

    monkeypatch.setattr(commprof.commands.run, "run", interrupted)
    exit_code, err = run_main(["run", "--quiet"], capsys)
    assert exit_code == code
    assert err.splitlines() == [line or raised.message]


def test_sigterm_to_commprof_becomes_interrupted_where_it_is(monkeypatch, capsys):
    """Outside a launch too (checking the model, writing the report): SIGTERM unwinds commprof as Ctrl-C does."""
    import os

    import commprof.commands.run

    def terminated(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGTERM)
        raise AssertionError("SIGTERM did not interrupt")

    monkeypatch.setattr(commprof.commands.run, "run", terminated)
    before = signal.getsignal(signal.SIGTERM)
    assert run_main(["run", "--quiet"], capsys) == (143, "interrupted\n")
    assert signal.getsignal(signal.SIGTERM) is before  # main() gives the handler back


def test_a_scripts_traceback_is_shown_once_above_the_one_line(monkeypatch, capsys):
    import commprof.commands.run

    traceback = 'Traceback (most recent call last):\n  File "/home/me/train.py", line 4, in <module>\nValueError: x'

    raised = RunFailed(Raised(1, "vm"), traceback=traceback)

    def failed(*args, **kwargs):
        raise raised

    monkeypatch.setattr(commprof.commands.run, "run", failed)
    code, err = run_main(["run", "--quiet"], capsys)
    assert code == 1
    assert err.splitlines() == [*traceback.splitlines(), "error: " + error_text(raised)]


def test_view_of_a_run_interrupted_before_its_profiler_recorded_says_so(tmp_path):
    run_dir = started_run(tmp_path)
    mark_interrupted(run_dir, "interrupted by SIGINT")
    with pytest.raises(UsageError) as error, tensorboard("r", tmp_path / "traces"):
        pass
    said = nothing_to_view("r", "interrupted", StepsDone(3, 200), BUILT_IN.schedule.profiled_steps)
    assert str(error.value) == f"{run_dir}: {said}"


def test_a_script_failing_on_what_commprof_gave_it_is_told_so_not_to_fix_itself():
    """Found by the commands matrix (benchmarks/check/commands_matrix.py): a compiled DDP under a cap below 1 MiB
    (torch's DDPOptimizer asserts), and a Lightning script whose Trainer fixes its devices run at another world size."""
    import dataclasses

    from commprof.commands.unfinished import _setting_torch_refused
    from commprof.config import RunConfig
    from commprof.settings import DDPOptions

    config = RunConfig(run_id="r", script=("train.py",))
    dynamo = "AssertionError: First bucket should be smaller/equal to other buckets to get comms warmed up ASAP"
    tiny = dataclasses.replace(config, ddp=DDPOptions(bucket_cap_mb=0.01))
    assert _setting_torch_refused(dynamo, tiny) == Refused("compiled_cap", 0.01)
    assert _setting_torch_refused(dynamo, config) is None  # not commprof's cap: the script's own
    lightning = (
        "ValueError: You set `devices=2` and `num_nodes=1` in Lightning, but the product (2 * 1) does not match the "
        "world size (1)."
    )
    one = dataclasses.replace(config, procs_per_node=1)
    assert _setting_torch_refused(lightning, one) == Refused("lightning_world", 1)
    assert _setting_torch_refused("ZeroDivisionError: division by zero", config) is None
