"""One measure of lateness (issue 52, item 1): who made the others wait in a step, read from the ranks' own records
(analysis/lateness.py), on hand-built steps whose every interval can be checked by eye; the whole run's stand-out
steps and its waits per step use it alike."""

import pytest

from commprof.analysis.lateness import late_rank, lateness
from commprof.analysis.whole_run import lateness_ledger, whole_run
from commprof.results.step_ledger import Call, LedgerBuilder, StepEntry
from commprof.worker.step_ledger import DDP_TIMERS, HOST_CLOCK

MB = 2**20


def waits_of(ledgers, schedule, compiled=frozenset()):
    return lateness_ledger(ledgers, schedule, compiled).waits


def cores_of(ledgers, schedule, compiled=frozenset()):
    return lateness_ledger(ledgers, schedule, compiled).core


def test_a_rank_late_to_its_one_bucket():
    """Rank 1 computes 30 ms longer: it launches its all-reduce at 40 ms and finds it done 5 ms later; rank 0 launched
    at 10 and had it in flight 35 ms."""
    step = {
        0: StepEntry.of(1, 50.0, (Call("all_reduce", MB, 10.0, 35.0),)),
        1: StepEntry.of(1, 50.0, (Call("all_reduce", MB, 40.0, 5.0),)),
    }
    assert lateness(step) == {0: 0.0, 1: 30.0}
    assert late_rank(step) == 1


def test_a_rank_late_between_two_buckets_each_bucket_timed():
    """A comm hook timed each bucket. Rank 0's hook on its first layer sleeps 30 ms between the buckets: the first
    bucket (launched at 10 on both) is alike, the second waits 30 ms on rank 1. Three ranks: rank 2 as rank 1."""
    first = Call("all_reduce", MB, 10.0, 5.0)
    late = StepEntry.of(1, 60.0, (first, Call("all_reduce", 4 * MB, 45.0, 5.0)))
    waiting = StepEntry.of(1, 60.0, (first, Call("all_reduce", 4 * MB, 15.0, 35.0)))
    step = {0: late, 1: waiting, 2: waiting}
    assert lateness(step) == {0: 30.0, 1: 0.0, 2: pytest.approx(0.0)}
    assert late_rank(step) == 0


def test_a_rank_late_between_two_buckets_under_ddps_own_timers():
    """DDP's own timers give one span per step, from the first bucket's launch to the last one's end: 10 to 50 ms
    on both ranks, alike. Rank 0's last gradient was ready at 45 ms, rank 1's at 15: their tails, 5 and 35 ms."""
    span = (Call("all_reduce", 5 * MB, 10.0, 40.0),)
    step = {0: StepEntry.of(1, 60.0, span, tail_ms=5.0), 1: StepEntry.of(1, 60.0, span, tail_ms=35.0)}
    assert lateness(step) == {0: 30.0, 1: 0.0}
    assert late_rank(step) == 0


def test_a_step_without_collectives_names_the_busiest_rank_and_no_wait():
    step = {0: StepEntry.of(1, 50.0), 1: StepEntry.of(1, 80.0)}
    assert lateness(step) == {0: 0.0, 1: 0.0} and late_rank(step) == 1
    assert lateness({0: StepEntry.of(1, 50.0)}) == {} and late_rank({0: StepEntry.of(1, 50.0)}) is None


def test_the_stand_out_step_and_the_waits_name_the_same_rank():
    """60 steps of 60 ms under DDP's own timers; at step 30 rank 1 is 300 ms late between its buckets: every rank's span
    and step are alike (both 360 ms), so the time outside collectives cannot tell who was late; its tail can."""
    built = {r: LedgerBuilder(r, "vm", DDP_TIMERS) for r in (0, 1)}
    for step in range(1, 61):
        late = 300.0 if step == 30 else 0.0
        span = (Call("all_reduce", 5 * MB, 10.0, 40.0 + late),)
        built[0].add(StepEntry.of(step, 60.0 + late + (step % 3 - 1) * 0.3, span, tail_ms=35.0 + late))
        built[1].add(StepEntry.of(step, 60.0 + late + (step % 3 - 1) * 0.3, span, tail_ms=35.0))
    ledgers = {r: b.ledger() for r, b in built.items()}
    whole = whole_run(ledgers, None)
    (standout,) = whole.standouts
    assert (standout.step, standout.rank) == (30, 1)
    waits = waits_of(ledgers, None)
    assert waits[1][30] == 300.0 and waits[0][30] == 0.0 and cores_of(ledgers, None)[1][30] == 0.0


def test_ranks_timed_by_a_hook_and_by_nothing_make_no_waits():
    timed = LedgerBuilder(0, "vm", HOST_CLOCK)
    untimed = LedgerBuilder(1, "vm", "")
    for step in range(1, 10):
        timed.add(StepEntry.of(step, 60.0, (Call("all_reduce", MB, 10.0, 5.0),)))
        untimed.add(StepEntry.of(step, 60.0))
    assert waits_of({0: timed.ledger(), 1: untimed.ledger()}, None) == {}


def test_lateness_spent_waiting_for_a_core_is_the_launchs_not_the_jobs():
    """Issue 60, item 4: three ranks, 40 steps of 60 ms, one 1 MiB all-reduce each. Rank 2 arrives 20 ms late at
    every step's all-reduce (its call in flight 5 ms, the others' 25). In steps 1-20 its training thread also waited
    for a core 18.5 ms longer than the others (20 ms against their 1 and 2, median 1.5): something else ran on its
    core, so 18.5 of its 20 ms are the launch's, 1.5 the job's. In steps 21-40 it waited as they did (1.5 ms): all 20
    are its own."""
    from commprof.analysis.lateness import core_wait_excess

    built = {r: LedgerBuilder(r, "vm", HOST_CLOCK) for r in (0, 1, 2)}
    for step in range(1, 41):
        shared = step <= 20
        for rank in (0, 1):
            call = (Call("all_reduce", MB, 30.0, 25.0),)
            built[rank].add(StepEntry.of(step, 60.0, call, core_wait_ms=1.0 + rank))
        late = (Call("all_reduce", MB, 50.0, 5.0),)
        built[2].add(StepEntry.of(step, 60.0, late, core_wait_ms=20.0 if shared else 1.5))
    step = {r: b.ledger().entries()[5] for r, b in built.items()}
    assert core_wait_excess(step) == {0: 0.0, 1: 0.0, 2: 18.5}  # 20 against the others' median, 1.5
    assert lateness(step)[2] == 20.0
    ledgers = {r: b.ledger() for r, b in built.items()}
    waits, cores = waits_of(ledgers, None), cores_of(ledgers, None)
    assert waits[2][10] == pytest.approx(1.5) and cores[2][10] == pytest.approx(18.5)
    assert waits[2][30] == 20.0 and cores[2][30] == 0.0


def _pairs_step(durations: dict[int, float]) -> dict[int, StepEntry]:
    """One step of two DDP replicas over {0, 1} and {2, 3} (both groups named "1" on their ranks, as torch names
    the k-th group each rank joins): each rank's one all-reduce of its pair, lasting `durations[rank]` ms."""
    return {r: StepEntry.of(1, 50.0, (Call("all_reduce", 4096, 10.0, ms, "1"),)) for r, ms in durations.items()}


PAIRS = {r: {"1": (0, 1) if r < 2 else (2, 3)} for r in range(4)}


def test_a_rank_late_in_its_own_group_is_late_there_and_the_other_group_is_not_blamed():
    """Rank 3 arrives 30 ms late at its pair's all-reduce: rank 2 waits 30 ms in it; ranks 0 and 1 never wait."""
    step = _pairs_step({0: 5.0, 1: 5.0, 2: 35.0, 3: 5.0})
    assert lateness(step, PAIRS) == {0: 0.0, 1: 0.0, 2: 0.0, 3: 30.0}
    assert late_rank(step, PAIRS) == 3
    blind = lateness(step)  # read across all 4 ranks as one group, rank 0 costs as much as rank 3
    assert blind[0] == blind[3] == 10.0 and late_rank(step) == 0


def test_a_step_over_the_whole_job_is_read_as_before():
    world = {r: {"0": (0, 1, 2, 3)} for r in range(4)}
    step = {r: StepEntry.of(1, 50.0, (Call("all_reduce", 4096, 10.0, 35.0 if r else 5.0, "0"),)) for r in range(4)}
    assert lateness(step, world) == lateness(step) and late_rank(step, world) == 0
