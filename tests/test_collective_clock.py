"""The whole run's clock (instrument/collective_clock.py) times every collective, whatever issued it, with its process
group: torch.distributed's calls, blocking or not, DTensor's functional collectives, a DDP comm hook's once
(one in-process rank, an in-memory store); and analysis/whole_run_groups.py turns each rank's per-group times into
the whole run's per-dimension figures."""

import time

import pytest
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol

from commprof.analysis.whole_run_groups import dimension_runs
from commprof.instrument.collective_clock import CollectiveClock
from commprof.results.step_ledger import Call, GroupTime, LedgerBuilder, LedgerGroup, StepEntry
from commprof.worker.step_ledger import CALLS_HOST, HOST_CLOCK, StepLedger


@pytest.fixture
def one_rank():
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    yield
    dist.destroy_process_group()


@pytest.fixture
def ledger(tmp_path, one_rank):
    recorder = StepLedger(tmp_path, 0, "vm", use_cuda=False, window=None)
    recorder.clock.install()
    yield recorder
    recorder.clock.uninstall()


def _calls(ledger: StepLedger) -> list[tuple[str, str, int, bool]]:
    """(op, group's description, bytes, timed) of each launch so far."""
    described = {name: group.desc for name, group in ledger.builder.groups.items()}
    return [(x.op, described[x.group], x.bytes, x.end is not None) for x in ledger.launches]


def test_blocking_and_asynchronous_calls_are_timed_with_their_group(ledger):
    sub = dist.new_group([0], group_desc="replicas")
    x = torch.ones(256)
    dist.all_reduce(x)
    dist.all_reduce(x, async_op=True).wait()
    dist.all_gather_into_tensor(torch.empty(256), x, group=sub)
    dist.broadcast(x, src=0, group=sub)
    assert _calls(ledger) == [
        ("all_reduce", "default_pg", 1024, True),
        ("all_reduce", "default_pg", 1024, True),
        ("all_gather", "replicas", 1024, True),
        ("broadcast", "replicas", 1024, True),
    ]
    assert ledger.builder.groups[sub.group_name] == LedgerGroup("replicas", [0])
    assert ledger.clock.own_ns > 0  # its own work, counted: the run says what the clock cost it
    assert ledger.builder.timed_by == CALLS_HOST
    first, second = ledger.launches[:2]
    assert first.end <= second.start  # blocking: the second is issued once the first ended


def test_a_functional_collective_is_timed_until_its_result_is_waited_for(ledger):
    tp = dist.new_group([0], group_desc="mesh_tp")  # a mesh's dimension, as DeviceMesh names its group
    reduced = funcol.all_reduce(torch.ones(64), "sum", tp)
    assert ledger.launches[-1].end is None  # issued, not waited for
    before = time.perf_counter_ns()
    assert reduced.view(8, 8)[0, 0].item() == 1.0  # DTensor's way: a view of the result, waited at its first use
    assert _calls(ledger) == [("all_reduce", "mesh_tp", 256, True)]
    assert ledger.launches[-1].end >= before


def test_a_ddp_comm_hooks_all_reduce_is_one_collective(ledger):
    """The timed hook is DDP's default all-reduce, a torch.distributed call itself: counted once, by the hook."""

    class Bucket:
        def buffer(self):
            return torch.ones(256)

    hook = ledger.timed(None, None)
    hook(None, Bucket()).wait()
    assert [(x.op, x.bytes) for x in ledger.launches] == [("all_reduce", 1024)]
    assert ledger.builder.timed_by == HOST_CLOCK


def test_the_clock_removes_itself():
    before = dist.all_reduce, funcol.all_reduce, funcol.wait_tensor
    clock = CollectiveClock(sink=None)  # type: ignore[arg-type]
    clock.install()
    assert dist.all_reduce is not before[0] and dist.all_reduce.__wrapped__ is before[0]
    clock.uninstall()
    assert (dist.all_reduce, funcol.all_reduce, funcol.wait_tensor) == before


def test_a_step_keeps_each_groups_time_in_flight_counted_once():
    calls = (
        Call("all_gather", 8, 0.0, 4.0, "1"),
        Call("all_gather", 8, 2.0, 4.0, "1"),  # overlaps the first: 6 ms in flight, not 8
        Call("all_reduce", 8, 10.0, 1.5, "3"),
        Call("all_reduce", 8, 20.0, 1.0, ""),  # no group named (a record from before issue 70): in no group
    )
    entry = StepEntry.of(1, 30.0, calls)
    assert entry.groups == (GroupTime("1", 6.0, 2), GroupTime("3", 1.5, 1))
    assert entry.comm_ms == 8.5


def _builder(rank: int, dp_ms: list[float], tp_ms: float) -> LedgerBuilder:
    builder = LedgerBuilder(rank, "vm", CALLS_HOST)
    builder.groups = {"1": LedgerGroup("mesh_dp", [rank % 2, rank % 2 + 2]), "3": LedgerGroup("mesh_tp", [0, 1])}
    for step, dp in enumerate(dp_ms, start=1):
        calls = (Call("all_gather", 8, 0.0, dp, "1"), Call("all_reduce", 8, 50.0, tp_ms, "3"))
        builder.add(StepEntry.of(step, 100.0, calls))
    return builder


def test_the_clocks_own_work_is_said_per_step_of_the_run():
    from commprof.analysis.whole_run import whole_run

    ledgers = {}
    for rank, clock_ms in ((0, 3.0), (1, 6.0)):
        builder = _builder(rank, [10.0] * 30, 2.0)
        builder.clock_ms = clock_ms  # over its 30 steps
        ledgers[rank] = builder.ledger()
    assert whole_run(ledgers, None).clock_ms == pytest.approx((0.1 + 0.2) / 2)


def test_the_whole_run_gives_each_dimension_its_median_step_over_the_ranks():
    ledgers = {0: _builder(0, [10.0, 12.0, 90.0], 4.0).ledger(), 1: _builder(1, [20.0, 20.0, 20.0], 2.0).ledger()}
    dp, tp = dimension_runs(ledgers)
    assert (dp.dimension, dp.comm_ms, dp.calls_per_step, dp.rank_comm_ms) == ("dp", 16.0, 1.0, {"0": 12.0, "1": 20.0})
    assert dp.groups == [[0, 2], [1, 3]]
    assert (tp.dimension, tp.comm_ms, tp.groups) == ("tp", 3.0, [[0, 1]])
    assert dimension_runs(ledgers, left_out=frozenset({1, 2}))[0].rank_comm_ms == {"0": 90.0, "1": 20.0}


def test_a_run_over_one_group_has_no_dimensions_of_its_own():
    builder = LedgerBuilder(0, "vm", CALLS_HOST)
    builder.groups = {"0": LedgerGroup("default_pg", [0, 1])}
    builder.add(StepEntry.of(1, 10.0, (Call("all_reduce", 8, 0.0, 1.0, "0"),)))
    assert dimension_runs({0: builder.ledger()}) == []


def test_each_call_is_recorded_before_the_backend_runs_it(tmp_path):
    """The record an abort cannot lose (instrument/entering.py): rewritten in place by each call, read back as the
    collective the rank last entered, its tensors named in torch's words."""
    from commprof.instrument.entering import EnteringRecord
    from commprof.results.hang import entering_path, read_entering

    record = EnteringRecord(entering_path(tmp_path, 3))
    record.write("all_reduce", "0", "default_pg", [torch.ones(1000)])
    record.write("all_gather", "1", "dp", [torch.ones(2, 4, dtype=torch.bfloat16), torch.ones(3, dtype=torch.int64)])
    record.close()
    (entered,) = read_entering(tmp_path).values()
    assert (entered.op, entered.group, entered.group_desc, entered.seq) == ("all_gather", "1", "dp", 0)
    assert (entered.sizes, entered.dtypes, entered.completed) == ([[2, 4], [3]], ["BFloat16", "Long"], False)
    assert list(read_entering(tmp_path)) == [3]
