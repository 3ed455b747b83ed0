"""A run that changes is said: where its step changed for good, by how much and what grew (issue 52, item 4). Series
of whole-run points built by hand, each number checkable by eye."""

from commprof.analysis.change_point import change_point
from commprof.analysis.whole_run import whole_run
from commprof.config import ProfileSchedule
from commprof.results.step_ledger import Call, LedgerBuilder, StepEntry
from commprof.results.whole_run import WholeRunPoint
from commprof.worker.step_ledger import HOST_CLOCK


def points(steps: list[float], comm: list[float]) -> list[WholeRunPoint]:
    return [WholeRunPoint(i + 1, 1, s, s, c) for i, (s, c) in enumerate(zip(steps, comm, strict=True))]


def jittered(base: float, n: int) -> list[float]:
    return [base + (i % 3 - 1) * base * 0.02 for i in range(n)]  # +-2%


def test_a_link_that_slows_at_step_51_is_a_change_in_communication():
    """400 ms steps (300 of them all-reduce) until step 50, then 800 (700): the link went from 1600 to 400 Mbit/s."""
    series = points(jittered(400, 50) + jittered(800, 50), jittered(300, 50) + jittered(700, 50))
    change = change_point(series)
    assert change is not None and change.step == 51 and change.grew == "communication"
    assert (change.step_ms_before, change.step_ms_after) == (400, 800)
    assert (change.comm_ms_before, change.comm_ms_after) == (300, 700)


def test_a_rank_that_computes_slower_from_step_71_is_a_change_in_computation():
    series = points(jittered(100, 70) + jittered(150, 30), jittered(40, 100))
    change = change_point(series)
    assert change is not None and change.step == 71 and change.grew == "computation"


def test_no_change_in_a_steady_run_a_drift_or_a_few_slow_steps():
    assert change_point(points(jittered(100, 100), jittered(40, 100))) is None
    drift = [100 + i * 0.15 for i in range(100)]  # 15% over the run: no step where it changed for good
    assert change_point(points(drift, jittered(40, 100))) is None
    spikes = jittered(100, 100)
    for i in (20, 21, 22, 60):  # four slow steps: stand-outs, not a change
        spikes[i] = 400
    assert change_point(points(spikes, jittered(40, 100))) is None
    assert change_point(points(jittered(100, 6) + jittered(200, 3), jittered(40, 9))) is None  # too few after


def test_the_profilers_window_is_no_change_and_a_window_on_one_side_is_not_typical():
    """The profiler slows steps 6-15 by 40%: left out, no change. The link slows from step 51: the window (6-15)
    shows the run before it, and is called so, not typical."""
    schedule = ProfileSchedule(wait=5, warmup=2, active=8)

    def run(slow_from: int) -> dict:
        builders = {r: LedgerBuilder(r, "vm", HOST_CLOCK, window=(6, 15)) for r in (0, 1)}
        for step in range(1, 101):
            profiled = 6 <= step <= 16
            comm = 700.0 if step >= slow_from else 300.0
            step_ms = (comm + 100) * (1.4 if profiled else 1.0) + (step % 3 - 1) * 4
            for builder in builders.values():
                builder.add(StepEntry.of(step, step_ms, (Call("all_reduce", 2**24, 50.0, comm),)))
        return {r: b.ledger() for r, b in builders.items()}

    steady = whole_run(run(slow_from=1000), schedule)
    assert steady is not None and steady.change is None and steady.window.typical
    changed = whole_run(run(slow_from=51), schedule)
    assert changed is not None and changed.change is not None and changed.change.step == 51
    assert not changed.window.typical
    assert "the run's step changed at step 51, from 400.0 to 800.0 ms: the window shows the run before it" in (
        changed.window.why
    )


def test_the_headline_keeps_the_two_sides_of_a_change_apart(tmp_path):
    """A report whose run changed at step 41 (400 to 800 ms): the headline says so and that the profiled steps, 8-17,
    are from before it; it quotes no one step of the whole run beside the window's shares."""
    import dataclasses
    import json

    from commprof.render.tables import headline
    from commprof.results.store import load_report
    from commprof.results.whole_run import ChangePoint, WholeRun, WindowCheck
    from tests.golden_reports import GOLDEN

    golden = json.loads((GOLDEN / "nccl-a100-rank0-of-2.json").read_text())  # without its volatile fields
    (tmp_path / "report.json").write_text(json.dumps({**golden, "created": "", "sources": []}))
    report = load_report(tmp_path / "report.json")
    change = ChangePoint(41, 400.0, 800.0, 300.0, 700.0, "communication")
    window = WindowCheck(8, 17, 410.0, 0, 0.0, False, "the run's step changed at step 41")
    whole = WholeRun("", [0, 1], 100, 1, 700.0, 600.0, 1050.0, 0, window=window, change=change)
    said = headline(dataclasses.replace(report, whole_run=whole))
    assert said.startswith(
        "The job's step changed at step 41, from 400.0 to 800.0 ms (slowest rank; the whole run, below); the profiled "
        "steps 8-17 are from before it, in which "
    )
    assert "without the profiler" not in said and "% of the step is exposed communication on rank" in said


def two_hosts(slow_rank_from: int = 10**6, slow_link_from: int = 10**6) -> dict:
    """Two ranks, on node0 and node1: 100 ms steps, 20 ms of them one all-reduce. From `slow_rank_from` on, rank 1
    computes 50 ms longer (rank 0 waits for it in the all-reduce); from `slow_link_from` on, the all-reduce itself
    takes 50 ms longer on both."""
    built = {r: LedgerBuilder(r, f"node{r}", HOST_CLOCK) for r in (0, 1)}
    for step in range(1, 101):
        late = 50.0 if step >= slow_rank_from else 0.0
        link = 50.0 if step >= slow_link_from else 0.0
        jitter = (step % 3 - 1) * 0.5
        for rank, builder in built.items():
            in_flight = 20.0 + link + (late if rank == 0 else 0.0)
            start = 80.0 + (late if rank == 1 else 0.0) - (late if rank == 0 else 0.0)
            call = Call("all_reduce", 2**24, start, in_flight)
            builder.add(StepEntry.of(step, 100.0 + late + link + jitter, (call,)))
    return {r: b.ledger() for r, b in built.items()}


def test_a_change_names_the_rank_and_host_the_others_came_to_wait_for_or_none_for_a_link():
    from commprof.render.whole_run_view import change_line

    slowed = whole_run(two_hosts(slow_rank_from=51), None).change
    assert slowed is not None and slowed.step == 51
    assert (slowed.late_rank, slowed.late_host, slowed.late_ms) == (1, "node1", 50.0)
    assert change_line(slowed) == (
        "the step changed at step 51, 100.0 to 150.0 ms (+50%): rank 1 on node1 came late: the others waited 50.0 ms "
        "longer for it per step (its own work grew, not a link)"
    )
    link = whole_run(two_hosts(slow_link_from=51), None).change
    assert link is not None and link.step == 51 and link.late_rank is None and link.grew == "communication"
    assert change_line(link).endswith("the time with a collective in flight moved with it")
