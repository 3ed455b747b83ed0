"""A run told as it happened: its step cut into stretches where it changed, each with its size and the rank late in
it, and a change of its communication alone named at its step (issues 52 and 62). Series and ledgers built by hand,
each number checkable by eye."""

import pytest

from commprof.analysis.change_point import change_points
from commprof.analysis.whole_run import whole_run
from commprof.config import ProfileSchedule
from commprof.results.step_ledger import Call, LedgerBuilder, StepEntry
from commprof.worker.step_ledger import HOST_CLOCK


def jittered(base: float, n: int) -> list[float]:
    return [base + (i % 3 - 1) * base * 0.02 for i in range(n)]  # +-2%


def test_a_series_is_cut_at_each_of_its_changes():
    assert change_points(jittered(400, 50) + jittered(800, 50)) == [50]
    assert change_points(jittered(15, 39) + jittered(75, 40) + jittered(15, 41)) == [39, 79]  # a stretch that ends
    two = jittered(15, 24) + jittered(55, 20) + jittered(15, 30) + jittered(55, 20) + jittered(15, 26)
    assert change_points(two) == [24, 44, 74, 94]
    assert change_points(jittered(30, 20) + jittered(15, 100)) == [20]  # a start-up that speeds up


def test_no_change_in_a_steady_run_a_drift_or_a_few_slow_steps():
    assert change_points(jittered(100, 100)) == []
    assert change_points([100 + i * 0.15 for i in range(100)]) == []  # 15% over the run: no step where it changed
    spikes = jittered(100, 100)
    for i in (20, 21, 22, 60):  # four slow steps: stand-outs, not a change
        spikes[i] = 400
    assert change_points(spikes) == []
    assert change_points(jittered(100, 6) + jittered(200, 3)) == []  # too few after
    assert change_points(jittered(0.1, 50) + jittered(0.2, 50), floor=0.5) == []  # clear, but under the floor


def ledgers(steps: int = 120, late: list | None = None, link: dict | None = None, compute: float = 15.0) -> dict:
    """Two ranks on node0 and node1. Each step: `compute` ms, then one all-reduce of 1 ms on the link. `late`:
    (rank, first, last, ms): that rank computes `ms` longer in steps first-last, the other waits in the all-reduce
    meanwhile. `link`: (first, ms, hidden): from step `first` on, the all-reduce takes `ms`; launched at the step's
    start and overlapped by the computation where `hidden` (the step holds), at its end otherwise."""
    built = {r: LedgerBuilder(r, f"node{r}", HOST_CLOCK) for r in (0, 1)}
    for step in range(1, steps + 1):
        jitter = (step % 3 - 1) * 0.2
        extra = {0: 0.0, 1: 0.0}
        for rank, first, last, ms in late or []:
            if first <= step <= last:
                extra[rank] += ms
        hidden = bool(link and link["hidden"])
        link_ms = link["ms"] if link and step >= link["first"] else 1.0
        arrivals = {r: (0.0 if hidden else compute) + extra[r] for r in built}
        end = max(arrivals.values()) + link_ms
        step_ms = max(end, compute + max(extra.values())) + jitter
        for rank, builder in built.items():
            call = Call("all_reduce", 2**20, arrivals[rank], end - arrivals[rank])
            builder.add(StepEntry.of(step, step_ms, (call,)))
    return {r: b.ledger() for r, b in built.items()}


def test_a_slow_stretch_is_named_from_its_first_step_to_its_last_with_the_rank_late_in_it():
    """Rank 0 is 60 ms late before its all-reduce in steps 40-79 of 120; before and after, both ranks are alike: three
    stretches, the middle one rank 0's, and two changes of step (the second a speed-up: rank 0 stopped coming late), not
    one lasting change."""
    whole = whole_run(ledgers(late=[(0, 40, 79, 60.0)]), None)
    assert [(s.first_step, s.last_step) for s in whole.stretches] == [(1, 39), (40, 79), (80, 120)]
    middle = whole.stretches[1]
    assert middle.step_ms == pytest.approx(76.0, abs=0.3) and middle.run_step_ms == pytest.approx(16.0, abs=0.3)
    assert (middle.late_rank, middle.late_host, middle.late_ms) == (0, "node0", 60.0)
    assert whole.stretches[0].late_rank is None and whole.stretches[2].late_rank is None
    assert middle.transfer_ms == pytest.approx(1.0)  # the collectives' own time held: no change of communication
    assert [(c.step, c.kind, c.late_rank, c.late_ms) for c in whole.changes] == [
        (40, "step", 0, 60.0),
        (80, "step", 0, -60.0),
    ]


def test_two_stretches_each_name_their_own_late_rank():
    whole = whole_run(ledgers(late=[(0, 25, 44, 40.0), (1, 75, 94, 40.0)]), None)
    spans = [(s.first_step, s.last_step, s.late_rank) for s in whole.stretches]
    assert spans == [(1, 24, None), (25, 44, 0), (45, 74, None), (75, 94, 1), (95, 120, None)]


def test_a_change_of_communication_alone_is_named_at_its_step():
    """From step 57 on the all-reduce takes 12 ms instead of 1, launched at the step's start and hidden by the 15 ms
    of computation: the step holds, the collectives' own time moved: named at 57, no change of step."""
    whole = whole_run(ledgers(link={"first": 57, "ms": 12.0, "hidden": True}), None)
    assert len(whole.stretches) == 1 and not whole.step_changes
    (change,) = whole.changes
    assert (change.step, change.kind) == (57, "communication")
    assert (change.transfer_ms_before, change.transfer_ms_after) == (1.0, 12.0)
    assert change.step_ms_after == pytest.approx(change.step_ms_before, abs=0.5)


def test_a_link_that_slows_the_step_is_one_change_of_step_in_communication():
    whole = whole_run(ledgers(link={"first": 51, "ms": 40.0, "hidden": False}), None)
    (change,) = whole.changes
    assert (change.step, change.kind, change.grew, change.late_rank) == (51, "step", "communication", None)


def test_the_profilers_window_is_no_change_and_a_window_lies_in_its_stretch():
    """The profiler slows steps 6-16 by 40%: left out, no change. The link slows from step 51: the window (6-15)
    lies in the stretch before it and is set against that stretch, typical of it."""
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
    assert steady is not None and steady.changes == [] and steady.window.typical and steady.window.stretch is None
    changed = whole_run(run(slow_from=51), schedule)
    assert [c.step for c in changed.changes] == [51]
    window = changed.window
    assert window.stretch == (1, 50) and window.against_ms == 400.0 and window.slowed_by_profiler


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
    """The facts a change is said from (test_render_change_words.py: these changes' words)."""
    (slowed,) = whole_run(two_hosts(slow_rank_from=51), None).changes
    assert (slowed.kind, slowed.step, slowed.step_ms_before, slowed.step_ms_after) == ("step", 51, 100.0, 150.0)
    assert (slowed.late_rank, slowed.late_host, slowed.late_ms) == (1, "node1", 50.0)
    (link,) = whole_run(two_hosts(slow_link_from=51), None).changes
    assert (link.kind, link.step, link.step_ms_before, link.step_ms_after) == ("step", 51, 100.0, 150.0)
    assert link.late_rank is None and link.grew == "communication"  # the time with a collective in flight moved
    assert (link.comm_ms_before, link.comm_ms_after) == (20.0, 70.0)


def test_the_split_read_from_running_sorted_sums_is_the_least_absolute_deviations_split():
    """The fast split (each side's deviation from its median read from a list kept sorted as it grows) against the
    plain definition, on random series and sub-ranges."""
    import random
    import statistics

    from commprof.analysis.change_point import _best_split

    def deviation(values):
        middle = statistics.median(values)
        return sum(abs(v - middle) for v in values)

    rng = random.Random(7)
    for _ in range(200):
        values = [rng.lognormvariate(0, 0.5) for _ in range(rng.randint(22, 70))]
        start, end = rng.randint(0, 3), len(values) - rng.randint(0, 3)  # two sides of 8 fit
        k = _best_split(values, start, end, 8)
        best = min(deviation(values[start:j]) + deviation(values[j:end]) for j in range(start + 8, end - 7))
        assert deviation(values[start:k]) + deviation(values[k:end]) == pytest.approx(best)


def test_a_change_inside_the_profiled_window_is_said_to_lie_in_it():
    """Window 51-60 (the profiler's reach, its warm-up 46-50 to the step after it, 61, left out); rank 0 40 ms late
    from step 53 on: the cut can only land on step 62, the first step weighed after it, so the change is said to lie
    in 46-62, the window may hold it, and the window is set against no stretch (the profiler's cost is then weighed
    against the whole run)."""
    schedule = ProfileSchedule(wait=45, warmup=5, active=10)
    built = {r: LedgerBuilder(r, f"node{r}", HOST_CLOCK, window=(51, 60)) for r in (0, 1)}
    for step in range(1, 121):
        late = 40.0 if step >= 53 else 0.0
        for rank, builder in built.items():
            arrival = 15.0 + (late if rank == 0 else 0.0)
            end = 15.0 + late + 1.0
            builder.add(
                StepEntry.of(step, end + (step % 3 - 1) * 0.2, (Call("all_reduce", 2**20, arrival, end - arrival),))
            )
    whole = whole_run({r: b.ledger() for r, b in built.items()}, schedule)
    (change,) = whole.changes
    assert (change.step, change.earliest_step) == (62, 46)
    assert whole.window.holds_change == 62 and not whole.window.typical and whole.window.stretch is None
    assert whole.stretch_of(51, 60) is None


def test_ranks_that_recorded_different_numbers_of_steps_end_the_last_stretch_at_the_last_step_recorded():
    """Rank 1 stopped at step 60, rank 0 ran to 120 and slowed at 90: no stretch ends before it starts."""
    long, short = ledgers(late=[(0, 90, 120, 40.0)]), ledgers(steps=60)
    whole = whole_run({0: long[0], 1: short[1]}, None)
    assert all(s.first_step <= s.last_step for s in whole.stretches) and whole.stretches[-1].last_step == 120


def test_a_change_of_a_run_whose_collectives_were_not_timed_says_what_grew_is_not_known():
    """FSDP, DeepSpeed: only the steps were timed outside the profiler; the step went from 100 to 200 ms at step 61.
    What grew is then not known (grew ""), and so said (test_render_change_words.py)."""
    built = {r: LedgerBuilder(r, "vm", "") for r in (0, 1)}
    for step in range(1, 121):
        for builder in built.values():
            builder.add(StepEntry.of(step, (200.0 if step > 60 else 100.0) + (step % 3 - 1)))
    (change,) = whole_run({r: b.ledger() for r, b in built.items()}, None).changes
    assert (change.step, change.grew, change.late_rank) == (61, "", None)
    assert (change.step_ms_before, change.step_ms_after, change.comm_ms_before, change.comm_ms_after) == (
        100.0,
        200.0,
        0.0,
        0.0,
    )
