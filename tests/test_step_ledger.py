"""The whole-run record: its fixed size however long the run (results/step_ledger.py), the recorder's timed comm
hook (worker/step_ledger.py, no process), and the report's whole-run section computed from hand-built records
whose every number can be checked by eye (analysis/whole_run.py)."""

import json
import math

import pytest
import torch

from commprof.analysis.rank_findings import stalls_in
from commprof.analysis.stats import mean_ci
from commprof.analysis.whole_run import lateness_ledger, whole_run
from commprof.config import ProfileSchedule
from commprof.launch.progress import Every
from commprof.results.step_ledger import (
    MAX_BLOCKS,
    MAX_CALLS,
    RECENT,
    SLOWEST,
    UPPER_BYTES,
    Call,
    LedgerBuilder,
    StepEntry,
    encode,
    quantile_ms,
    read_ledgers,
)
from commprof.worker.step_ledger import DDP_TIMERS, HOST_CLOCK, StepLedger


def waits_of(ledgers, schedule, compiled=frozenset()):
    return lateness_ledger(ledgers, schedule, compiled).waits


def test_a_step_s_communication_is_the_union_of_its_calls():
    entry = StepEntry.of(
        1, 10.0, (Call("all_reduce", 8, 1, 3), Call("all_reduce", 8, 2, 3), Call("all_reduce", 8, 7, 1))
    )
    assert entry.comm_ms == pytest.approx(5.0) and entry.bytes == 24  # 1-5 and 7-8


def test_a_run_of_100000_steps_keeps_a_bounded_record():
    builder = LedgerBuilder(0, "host", HOST_CLOCK, window=(8, 17))
    for step in range(1, 100_001):
        slow = step % 1000 == 0
        builder.add(StepEntry.of(step, 200.0 if slow else 10.0 + step % 7, (Call("all_reduce", 1024, 1.0, 2.0),)))
    ledger = builder.ledger()
    assert ledger.steps == 100_000
    assert ledger.block_steps == 256 and len(ledger.blocks) == math.ceil(100_000 / 256) <= MAX_BLOCKS
    assert sum(b.steps for b in ledger.blocks) == 100_000
    assert [b.first for b in ledger.blocks[:3]] == [1, 257, 513]
    assert ledger.blocks[3].step_ms_max == 200.0 and ledger.blocks[3].slowest == 1000  # steps 769-1024
    assert [e.step for e in ledger.recent] == list(range(100_000 - RECENT + 1, 100_001))
    assert [e.step for e in ledger.window] == list(range(8, 18))
    slowest = {e.step for e in ledger.slowest}
    assert len(slowest) == SLOWEST and set(range(1000, 100_001, 1000)) <= slowest  # all 100 of the 200 ms steps
    assert quantile_ms(ledger.histogram, 0.5) == pytest.approx(13.0, rel=0.05)
    assert ledger.steps_over(100.0) == 100
    assert len(encode(ledger)) < 2**20


def test_the_record_never_exceeds_its_upper_size():
    builder = LedgerBuilder(0, "h" * 64, HOST_CLOCK, window=(1, 10**6))  # every step profiled: the window's cap
    calls = tuple(Call("all_reduce", 2**40, 1e9 / 3 + i, 1e9 / 7) for i in range(MAX_CALLS + 5))
    for step in range(1, 3 * RECENT):
        builder.add(StepEntry.of(step, 1e9 / 3 + step, calls))
    ledger = builder.ledger()
    assert all(e.calls_dropped == 5 and len(e.calls) == MAX_CALLS for e in ledger.recent)
    assert (
        ledger.recent[0].comm_ms == pytest.approx(1e9 / 7 + MAX_CALLS + 4)
        and ledger.blocks[0].calls == 69 * ledger.block_steps
    )
    assert len(encode(ledger)) < UPPER_BYTES


def test_the_recorder_times_each_bucket_from_launch_to_completion_on_the_host_clock(tmp_path):
    ledger = StepLedger(tmp_path, 3, "vm", use_cuda=False, window=None)
    pending: list[torch.futures.Future] = []

    def backend(state, bucket):  # a collective that completes when the test says so
        pending.append(torch.futures.Future())
        return pending[-1]

    class Bucket:
        def buffer(self):
            return torch.zeros(256)

    hook = ledger.timed(backend)
    ledger.step_started()
    results = [hook(None, Bucket()), hook(None, Bucket())]
    pending[1].set_result(torch.ones(2))
    pending[0].set_result(torch.zeros(2))
    assert results[0].wait().tolist() == [0.0, 0.0]  # the collective's own value passes through
    ledger.step_ended(12.5)
    ledger.finish()
    (recorded,) = read_ledgers(tmp_path).values()
    assert recorded.rank == 3 and recorded.timed_by == HOST_CLOCK and recorded.steps == 1
    (step,) = recorded.recent
    assert step.step == 1 and step.step_ms == 12.5
    assert [(c.op, c.bytes) for c in step.calls] == [("all_reduce", 1024)] * 2
    first, second = step.calls
    assert 0 <= first.start_ms <= second.start_ms  # launched in order, from the step's start
    assert second.start_ms + second.duration_ms <= first.start_ms + first.duration_ms  # the second completed first


def _ledgers(
    steps: int = 40, sleeps: tuple[int, ...] = (10, 20, 30), sleeper: int = 1, stall_ms=lambda step: 200.0
) -> dict:
    """Two ranks of a synchronous job: a step is 10 ms, 4 ms of it one 64 MiB all-reduce from 5 ms in. At each
    step of `sleeps`, `sleeper` stalls `stall_ms(step)` before it launches; the other waits for it inside the
    all-reduce."""
    builders = {r: LedgerBuilder(r, "vm", HOST_CLOCK, window=(8, 17)) for r in (0, 1)}
    for step in range(1, steps + 1):
        for rank, builder in builders.items():
            stall = stall_ms(step) if step in sleeps else 0.0
            if rank == sleeper:
                call = Call("all_reduce", 64 * 2**20, 5.0 + stall, 4.0)
            else:
                call = Call("all_reduce", 64 * 2**20, 5.0, 4.0 + stall)
            builder.add(StepEntry.of(step, 10.0 + stall, (call,)))
    return {r: b.ledger() for r, b in builders.items()}


SCHEDULE = ProfileSchedule(wait=5, warmup=2, active=10)  # records steps 8-17


def test_the_steps_that_stand_out_and_the_rank_that_made_them_slow():
    found = whole_run(_ledgers(), SCHEDULE)
    assert found is not None
    assert found.steps == 40 and found.ranks == [0, 1] and found.timed_by == HOST_CLOCK
    assert found.median_step_ms == 10.0 and found.median_comm_ms == 4.0 and found.threshold_ms == 15.0
    assert found.standout_count == 3 and [s.step for s in found.standouts] == [10, 20, 30]
    for standout in found.standouts:
        assert standout.rank == 1 and standout.step_ms == 210.0
        assert standout.busy_ms == 206.0  # rank 1: 210 ms, 4 of them in its all-reduce
        assert (standout.collective, standout.collective_bytes) == ("all_reduce", 64 * 2**20)
        assert standout.waited_ms == 204.0  # rank 0's
    # step 10 is inside the window: compared with the window's own median, also 10 ms
    assert [s.lost_ms for s in found.standouts] == [200.0, 200.0, 200.0]
    assert found.slow_rank == 1 and found.slow_rank_steps == 3 and found.slow_rank_lost_ms == 600.0
    assert found.slow_rank_every == 10
    assert [p.first_step for p in found.series] == list(range(1, 41))
    assert found.series[19].step_ms == 210.0 and found.series[19].comm_ms == pytest.approx((204 + 4) / 2)


def test_a_window_between_the_slow_steps_is_said_not_to_be_typical():
    found = whole_run(_ledgers(steps=100, sleeps=tuple(range(20, 101, 10))), SCHEDULE)
    assert found is not None and found.window is not None
    assert (found.window.first_step, found.window.last_step, found.window.standouts) == (8, 17, 0)
    assert found.window.expected_standouts == pytest.approx(9 * 10 / 100)
    assert not found.window.typical
    assert found.window.missed_standouts and (found.window.run_standouts, found.window.run_steps) == (9, 100)


def test_a_window_like_the_run_is_typical_and_a_run_without_records_has_no_section():
    found = whole_run(_ledgers(sleeps=()), SCHEDULE)
    assert found is not None and found.standout_count == 0 and found.slow_rank is None
    assert found.window is not None and found.window.typical and found.window.median_ms == 10.0
    assert whole_run({}, SCHEDULE) is None
    assert whole_run(_ledgers(), None).window is None  # nothing profiled


def test_the_first_steps_and_the_step_that_writes_the_traces_never_stand_out():
    found = whole_run(_ledgers(sleeps=(2, 18, 25)), SCHEDULE)  # 18: the ranks write their traces in it
    assert found is not None and [s.step for s in found.standouts] == [25]


def test_records_are_read_back_whole(tmp_path):
    for rank, ledger in _ledgers().items():
        (tmp_path / f"rank{rank}.ledger.json").write_bytes(encode(ledger))
    (tmp_path / "rank9.ledger.json").write_text("{broken")
    assert read_ledgers(tmp_path) == _ledgers()
    assert json.loads((tmp_path / "rank0.ledger.json").read_text())["steps"] == 40


def test_what_each_rank_made_the_others_wait_at_each_unprofiled_step():
    waits = waits_of(_ledgers(), SCHEDULE)
    # steps 4-5 and 19-40 (the first three and the profiler's reach, 6-18, left out): rank 1 made rank 0 wait
    # 200 ms at steps 20 and 30, nothing else
    assert list(waits[1]) == list(waits[0]) == [4, 5, *range(19, 41)]
    assert {step: ms for step, ms in waits[1].items() if ms} == {20: 200.0, 30: 200.0}
    assert set(waits[0].values()) == {0.0}


def test_a_rank_that_stalls_now_and_then_is_a_finding_of_the_whole_run():
    ledgers = _ledgers(steps=100, sleeps=tuple(range(20, 101, 10)))
    whole = whole_run(ledgers, SCHEDULE)
    (finding,) = stalls_in(whole, waits_of(ledgers, SCHEDULE))
    facts = finding.facts
    assert finding.kind == "stalls_now_and_then" and facts.rank == 1
    assert (facts.steps, facts.run_steps, facts.lost_ms) == (list(range(20, 101, 10)), 100, 200.0)
    assert (facts.every, facts.window) == (10, (8, 17))
    unprofiled = 100 - 3 - 13  # the first three and the window's reach, steps 6-18
    assert finding.gain_ms.value == pytest.approx(9 * 200 / unprofiled)
    # nine stalls of exactly 200 ms every 10 steps: a rerun has as many, as large
    assert finding.gain_ms.low == finding.gain_ms.high == finding.gain_ms.value


def test_stalls_every_10_steps_keep_their_count_in_the_interval_and_stalls_at_no_period_do_not():
    """Stalls of 202, 203, ..., 210 ms at steps 20, 30, ..., 100: only their sizes move the interval (variance 7.5,
    8 degrees of freedom, t = 2.306), not how many there are. Six stalls at no period: the bootstrap of every
    step's wait, in which a rerun may stall more or less often."""
    ledgers = _ledgers(steps=100, sleeps=tuple(range(20, 101, 10)), stall_ms=lambda step: 200 + step / 10)
    (finding,) = stalls_in(whole_run(ledgers, SCHEDULE), waits_of(ledgers, SCHEDULE))
    unprofiled = 100 - 3 - 13
    mean, half = 1854 / unprofiled, 2.306 * (9 * 7.5) ** 0.5 / unprofiled
    gain = finding.gain_ms
    assert (gain.value, gain.low, gain.high) == pytest.approx((mean, mean - half, mean + half))

    irregular = (20, 23, 41, 70, 72, 95)
    ledgers = _ledgers(steps=100, sleeps=irregular)
    whole = whole_run(ledgers, SCHEDULE)
    assert whole is not None and whole.slow_rank_every is None
    waits = waits_of(ledgers, SCHEDULE)
    (finding,) = stalls_in(whole, waits)
    assert finding.gain_ms == mean_ci(list(waits[1].values()))
    assert finding.gain_ms.low < 6 * 200 / unprofiled / 2  # the count of stalls may halve


def test_a_rank_late_at_every_step_is_the_straggler_s_finding_not_this_one():
    ledgers = _ledgers(sleeps=tuple(range(1, 41)))
    assert stalls_in(whole_run(ledgers, SCHEDULE), waits_of(ledgers, SCHEDULE)) == []


def test_a_log_that_grows_is_rewritten_less_often(monkeypatch):
    """A step log of 100,000 steps takes about 0.1 s to write: at most 1% of the run goes to it."""
    clock = [0.0]
    monkeypatch.setattr("commprof.launch.progress.time.monotonic", lambda: clock[0])
    due = Every(0.25)
    assert due()
    due.took(0.1)
    clock[0] = 9.9
    assert not due()
    clock[0] = 10.0
    assert due()
    due.took(0.001)  # small again: back to the quarter second
    clock[0] = 10.25
    assert due()


def test_a_step_stands_out_only_beyond_the_run_s_own_jitter():
    """Steps of 6 and 14 ms in turn, one of 16 ms and one of 200: the median is 14 ms, the deviations from it 0 (19
    steps), 2, 8 (19) and 186, their median 5 ms (7.4 as a standard deviation). The 16 ms step is within the jitter
    (14 + 10 x 7.4 ms) though over 1.5x the median; the 200 ms stall is not."""
    builders = {r: LedgerBuilder(r, "vm", HOST_CLOCK) for r in (0, 1)}
    for step in range(1, 41):
        for builder in builders.values():
            ms = {25: 16.0, 30: 200.0}.get(step, 6.0 if step % 2 else 14.0)
            builder.add(StepEntry.of(step, ms, (Call("all_reduce", 8, 1.0, 1.0),)))
    found = whole_run({r: b.ledger() for r, b in builders.items()}, None)
    assert found is not None and found.median_step_ms == 14.0
    assert found.threshold_ms == pytest.approx(14 + 10 * 1.4826 * 5)
    assert [s.step for s in found.standouts] == [30] and found.standout_count == 1


def test_a_rank_late_between_two_buckets_is_found_at_every_step():
    """Two buckets a step, the second launched at 5 ms on rank 1 but at 35 ms on rank 0, whose gradient hook on the
    first layer sleeps 30 ms between them; both finish it at 39 ms. At even steps the first bucket is done at 4 ms,
    and each rank's span with a collective in flight tells (rank 1: 36 ms, rank 0: 6 ms); at odd steps the first
    runs on until 39 ms on both ranks and the spans are the same (37 ms): only the second bucket's own time tells.
    30 ms a step is charged to rank 0 at every step (issue 52: a rank late between two buckets read 0)."""
    builders = {r: LedgerBuilder(r, "vm", HOST_CLOCK, window=(8, 17)) for r in (0, 1)}
    for step in range(1, 31):
        first = Call("all_reduce", 2**20, 2.0, 2.0)
        late = {0: Call("all_reduce", 4 * 2**20, 35.0, 4.0), 1: Call("all_reduce", 4 * 2**20, 5.0, 34.0)}
        for rank, builder in builders.items():
            # the in-flight union hides it when the first bucket runs on until the second ends on every rank
            hidden = Call("all_reduce", 2**20, 2.0, 37.0)
            builder.add(StepEntry.of(step, 40.0, (hidden if step % 2 else first, late[rank])))
    waits = waits_of({r: b.ledger() for r, b in builders.items()}, SCHEDULE)
    assert set(waits[0].values()) == {30.0} and set(waits[1].values()) == {0.0}
    unions = {r: b.ledger().recent[-2].comm_ms for r, b in builders.items()}
    assert unions[0] == unions[1] == 37.0  # odd steps: the same span on both ranks, and still 30 ms charged


def test_a_rank_whose_gradients_are_ready_last_is_found_from_ddps_own_timers():
    """A CPU DDP without a comm hook gives one span per step (first bucket's launch to the last one's end), alike on
    both ranks when rank 0 is late between two buckets; its own timers also say when its last gradient was ready:
    34 ms before the end on rank 1, 4 ms on rank 0. Rank 0 made rank 1 wait 30 ms, every step."""
    builders = {r: LedgerBuilder(r, "vm", DDP_TIMERS, window=(8, 17)) for r in (0, 1)}
    for step in range(1, 31):
        for rank, builder in builders.items():
            span = (Call("all_reduce", 5 * 2**20, 2.0, 37.0),)
            builder.add(StepEntry.of(step, 40.0, span, tail_ms=4.0 if rank == 0 else 34.0))
    waits = waits_of({r: b.ledger() for r, b in builders.items()}, SCHEDULE)
    assert set(waits[0].values()) == {30.0} and set(waits[1].values()) == {0.0}
