"""A job that ends inside the profiler's window (issue 30): the range of the ProfilerStep still open when it ended
holds no optimizer step; it is dropped, said so, and never counted as a step."""

import pytest

from commprof.analysis.analyze import analyze
from commprof.results.store import load_report
from commprof.trace.load import load_run
from tests.conftest import REPO, commprof_here
from tests.tracebuilder import GLOO, TraceBuilder


def ended_inside_the_window(trailing_optimizer: bool = False) -> TraceBuilder:
    """Five steps of 100 us, each forward [0,40], one all-reduce (c10d op at 40, Gloo [42,60]), optimizer [80,100];
    then ProfilerStep#6 [500,520], where the script only tore down (no optimizer step, no all-reduce)."""
    b = TraceBuilder(rank=0, world_size=2, backend="gloo")
    for n in range(5):
        t = 100 * n
        b.step(n + 1, t, 100).x("aten::linear", t, 40).x("c10d::allreduce_", t + 40, 2)
        b.x(
            "gloo:all_reduce", t + 42, 18, cat="user_annotation", thread=GLOO, Input_Dims=[[1024]], Input_type=["float"]
        )
        b.x("Optimizer.step#SGD.step", t + 80, 20, cat="user_annotation").x("aten::add_", t + 80, 20)
    b.step(6, 500, 20).x("aten::empty", 505, 5)
    if trailing_optimizer:
        b.x("Optimizer.step#SGD.step", 510, 5, cat="user_annotation")
    return b


def test_a_trailing_step_without_an_optimizer_step_is_dropped(tmp_path):
    report = analyze(load_run([ended_inside_the_window().write(tmp_path / "r.json")], workers=1), "s", "analysis")
    (rank,) = report.ranks
    assert rank.steps == 5 and rank.step_time_ms.mean == pytest.approx(0.1)
    (allreduce,) = report.collectives
    assert allreduce.calls_per_step == 1.0  # not 5 calls over 6 "steps"
    assert any("ProfilerStep#6 ran no optimizer step" in w and "not counted as a step" in w for w in report.warnings)


def test_a_last_step_that_stepped_the_optimizer_counts(tmp_path):
    traced = ended_inside_the_window(trailing_optimizer=True).write(tmp_path / "r.json")
    report = analyze(load_run([traced], workers=1), "s", "analysis")
    assert report.ranks[0].steps == 6 and not any("ran no optimizer step" in w for w in report.warnings)


SCRIPT = REPO / "tests" / "data" / "scripts" / "train_iters.py"


@pytest.mark.slow
def test_a_script_that_ends_inside_the_window_is_reported_on_what_it_recorded(tmp_path):
    """The default window records steps 8-17; the script stops after 12: a report of steps 8-12, which says so with
    a --schedule that fits (in the report, not on the terminal alone), one all-reduce a step (the range left open at
    its end is not a step); the whole run's window check is of steps 8-12, not 8-17."""
    from commprof.results.report import ShortWindow

    result = commprof_here("run", "--run-id", "short", "--", str(SCRIPT), "--iters", "12", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    report = load_report(tmp_path / "reports" / "short")
    assert report.short_window == ShortWindow(first_step=8, last_step=12, asked=10, fits=(3, 2, 6))
    assert report.whole_run is not None and report.whole_run.window is not None
    assert (report.whole_run.window.first_step, report.whole_run.window.last_step) == (8, 12)
    assert [r.steps for r in report.ranks] == [5, 5]
    assert [c.calls_per_step for c in report.collectives if c.op == "all_reduce"] == [1.0]


@pytest.mark.slow
def test_a_script_that_ends_before_the_window_is_told_what_to_change(tmp_path):
    result = commprof_here("run", "--run-id", "early", "--", str(SCRIPT), "--iters", "3", cwd=tmp_path)
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()[-1:]
    assert line.startswith(
        "error: the script ran 3 optimizer step(s) and ended before the profiler's first recorded step, step 8 "
        "(--wait 5 --warmup 2): profile earlier, e.g. --schedule 0,0,3"
    )


@pytest.mark.slow
def test_the_first_optimizer_step_can_be_profiled(tmp_path):
    """--schedule 0,0,1: the window is the first step, from the model's first forward to the first optimizer step:
    one step with its forward, backward and the bucket's all-reduce (not an empty 0.3 ms range)."""
    args = ("--run-id", "first", "--schedule", "0,0,1", "--", str(SCRIPT), "--iters", "4")
    result = commprof_here("run", *args, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    report = load_report(tmp_path / "reports" / "first")
    assert [r.steps for r in report.ranks] == [1, 1]
    assert {p.phase for p in report.phases} >= {"forward", "backward", "optimizer"}
    assert [c.calls_per_step for c in report.collectives if c.op == "all_reduce"] == [1.0]
