"""Every process group and every mesh dimension (issue 70), on a real 2-D run recorded by commprof
(tests/data/fsdp-tp/: FSDP2 over "dp" and tensor parallelism over "tp", dp=2 x tp=2 on 4 CPU ranks over Gloo, whose
traces name no group) and on hand-built records whose answer is known."""

import dataclasses

import pytest

from commprof.analysis.analyze import analyze_run
from commprof.commands.reporting import report_from_traces
from commprof.trace.groups import TOLERANCE_US, dimension, entry_row, groups_of, with_groups
from commprof.trace.load import load_run
from commprof.trace.model import Collective, ProcessGroup, RankTrace, Step
from tests.conftest import REPO

RUN = REPO / "tests" / "data" / "fsdp-tp"
DP = [[0, 2], [1, 3]]  # dp=2 x tp=2: init_device_mesh's ("dp", "tp") over ranks 0-3
TP = [[0, 1], [2, 3]]


@pytest.fixture(scope="module")
def analysed():
    report, _ = report_from_traces([RUN], "tp", "analysis", workers=1)
    trace = load_run(sorted(RUN.glob("rank*.pt.trace.json.gz")), workers=1)
    return report, trace, analyze_run(trace, "tp", "analysis", run=report.run)


def test_every_collective_of_a_gloo_run_is_given_its_group_and_the_groups_their_members(analysed):
    _, trace, _ = analysed
    for rank in trace.ranks:
        members = {g.name: sorted(g.ranks) for g in rank.groups}
        assert all(c.process_group is not None and c.group_size == 2 for c in rank.collectives)
        assert all(rank.rank in members[c.process_group] for c in rank.collectives)  # a group of its own
        dims = {dimension(g.desc) for g in rank.groups if g.name in {c.process_group for c in rank.collectives}}
        assert dims == {"dp", "tp"}


def test_the_whole_run_times_every_collective_of_every_dimension_as_the_window_counts_them(analysed):
    """The whole run's clock (instrument/collective_clock.py) saw FSDP's and DTensor's collectives at each call: per
    dimension, as many a step as the profiled window's trace holds, over the same groups; and the run folder's
    records of groups are not taken for traces."""
    report, _, _ = analysed
    assert report.whole_run is not None and not report.warnings
    whole = {d.dimension: (d.groups, d.calls_per_step) for d in report.whole_run.dimensions}
    window = {d.dimension: (d.groups, d.calls_per_step) for d in report.dimensions}
    assert whole == window == {"dp": (DP, 9.0), "tp": (TP, 5.0)}
    assert all(d.comm_ms > 0 for d in report.whole_run.dimensions)


def test_collectives_are_matched_among_their_groups_members_alone(analysed):
    report, _, analysis = analysed
    spans = [sorted(m.spans) for m in analysis.matching.collectives]
    assert spans and all(s in DP + TP for s in spans)  # never across all 4 ranks
    comm = {r.rank: r.comm_ms for r in report.ranks}
    assert all(s.wait_ms < comm[s.rank] for s in report.cross_rank.ranks)  # a wait is a part of communication


def test_each_row_names_its_dimension_and_groups_with_the_groups_busbw(analysed):
    report, _, _ = analysed
    rows = {(c.op, c.phase, c.group): c for c in report.collectives}
    purposes = {key: c.purpose for key, c in rows.items()}
    assert purposes[("all_reduce", "forward", "tp")] == "TP activation all-reduce"
    assert purposes[("all_reduce", "backward", "tp")] == "TP input-gradient all-reduce"
    assert purposes[("all_reduce", "backward", "dp")] == "gradient reduce-scatter"  # FSDP's own range says
    assert set(rows) == {
        ("all_gather", "forward", "dp"),
        ("all_gather", "backward", "dp"),
        ("all_reduce", "backward", "dp"),  # FSDP's reduce-scatter, which Gloo runs as an all-reduce
        ("all_reduce", "forward", "tp"),  # RowwiseParallel's output
        ("all_reduce", "backward", "tp"),  # ColwiseParallel's input gradient
    }
    for (_, _, dim), row in rows.items():
        assert row.group_ranks == (DP if dim == "dp" else TP) and row.group_size == 2 and row.busbw_gbps is not None


def test_each_dimension_has_its_communication_and_exposed_time_most_exposed_first(analysed):
    report, _, _ = analysed
    dims = {d.dimension: d for d in report.dimensions}
    assert set(dims) == {"dp", "tp"} and dims["dp"].groups == DP and dims["tp"].groups == TP
    assert [d.exposed_ms for d in report.dimensions] == sorted((d.exposed_ms for d in report.dimensions), reverse=True)
    for d in report.dimensions:
        assert 0 < d.exposed_ms <= d.comm_ms and set(d.rank_comm_ms) == {"0", "1", "2", "3"}
        assert d.calls_per_step == {"dp": 9.0, "tp": 5.0}[d.dimension]  # 3 gathers twice, 3 reductions; 3 + 2
    for rank in report.ranks:  # each dimension's time is part of the rank's communication (they overlap little)
        assert max(d.rank_comm_ms[str(rank.rank)] for d in report.dimensions) <= rank.comm_ms + 1e-6


DP_GROUP = ProcessGroup("1", "mesh_dp", (0, 2))


def _rank(starts: list[float], groups=(DP_GROUP,)) -> RankTrace:
    calls = tuple(Collective("all_gather", "gloo", s, s + 100.0, 4096, "float", group_size=2) for s in starts)
    return RankTrace(
        "r0", 0, 4, "gloo", "cpu", 1e9, (Step("ProfilerStep#1", 0, 1e6),), (), (), (), calls, groups=groups
    )


def test_the_record_is_aligned_with_the_traced_calls_at_the_window_not_the_steps_before():
    rank = _rank([1000.0, 5000.0])
    base = rank.base_us
    rows = [
        [base - 90_000, "9", "all_gather", 1024],  # a step before the window: another group's, earlier
        [base - 50_000, "9", "all_gather", 1024],
        [base + 900.0, "1", "all_gather", 1024],  # created before each traced call started
        [base + 4900.0, "1", "all_gather", 1024],
        [base + 4950.0, "3", "all_reduce", 1024],  # another op: another stream
    ]
    named = with_groups(rank, rows)
    assert [(c.process_group, c.group_size) for c in named.collectives] == [("1", 2), ("1", 2)]


def test_a_record_created_after_the_calls_started_names_nothing():
    rank = _rank([1000.0], groups=(DP_GROUP, ProcessGroup("3", "mesh_tp", (0, 1))))  # two groups of its size
    late = [[rank.base_us + 1000.0 + 2 * TOLERANCE_US, "1", "all_gather", 1024]]
    assert with_groups(rank, late).collectives[0].process_group is None
    other_size = [[rank.base_us + 900.0, "1", "all_gather", 2048]]
    assert with_groups(rank, other_size).collectives[0].process_group is None


def test_groups_and_dimensions_as_traces_and_the_flight_recorder_name_them():
    info = {
        "pg_config": [
            {"pg_name": "0", "pg_desc": "default_pg", "ranks": [0, 1, 2, 3]},
            {"pg_name": "3", "pg_desc": "mesh_tp", "ranks": "[0, 1]"},  # older torch: a string
            {"pg_name": "5", "pg_desc": "undefined"},  # no ranks: left out
        ]
    }
    assert groups_of(info) == (ProcessGroup("0", "default_pg", (0, 1, 2, 3)), ProcessGroup("3", "mesh_tp", (0, 1)))
    assert [dimension(d) for d in ("mesh_dp", "mesh_dp_shard", "default_pg", "mesh_")] == ["dp", "dp_shard", None, None]
    entry = {"process_group": ("3", "mesh_tp"), "profiling_name": "gloo:all_gather", "time_created_ns": 2_000_000}
    assert entry_row({**entry, "input_sizes": [[4, 8]]}) == [2000.0, "3", "all_gather", 32]
    send = {**entry, "profiling_name": "nccl:send", "is_p2p": True, "input_sizes": [[16]]}
    assert entry_row(send) == [2000.0, "3", "send_recv", 16]  # a pipeline's, over its stage group
    assert entry_row({**entry, "profiling_name": "gloo:unknown_op"}) is None


def test_a_default_group_for_several_devices_is_known_by_its_backend_on_the_ranks_device():
    """A default group given by its config ('cpu:gloo'), or init_device_mesh's, which dist.get_backend() calls
    'undefined': the link probe, which runs where the script's backend is Gloo or NCCL, was skipped on a 2-D run."""
    import torch.distributed as dist

    from commprof.worker.script_session import default_backend

    dist.init_process_group("cpu:gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        assert str(dist.get_backend()) == "cpu:gloo" and default_backend(use_cuda=False) == "gloo"
    finally:
        dist.destroy_process_group()
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        assert default_backend(use_cuda=False) == "gloo"
    finally:
        dist.destroy_process_group()


def test_without_a_record_a_collective_is_its_ranks_only_group_of_its_size():
    """Traces copied without their records (or from elsewhere): a rank of one group of a collective's size."""
    world = ProcessGroup("0", "default_pg", (0, 1, 2, 3))
    alone = _rank([1000.0], groups=(world, DP_GROUP))
    assert with_groups(alone, []).collectives[0].process_group == "1"  # the traced call ran over 2 ranks: dp
    two = _rank([1000.0], groups=(DP_GROUP, ProcessGroup("3", "mesh_tp", (0, 1))))
    assert with_groups(two, []).collectives[0].process_group is None  # dp or tp: not known


def test_hybrid_sharding_shards_within_one_dimension_and_all_reduces_across_the_other():
    """HSDP (tests/data/hsdp/: a 2 x 2 mesh, ("dp_replicate", "dp_shard")): the parameter all-gathers and gradient
    reduce-scatters within each shard group, the replicate all-reduce across replicas, each matched among its own."""
    hsdp = REPO / "tests" / "data" / "hsdp"
    report, _ = report_from_traces([hsdp], "hsdp", "analysis", workers=1)
    over = {(c.op, c.purpose): (c.group, c.group_ranks) for c in report.collectives}
    shard, replicate = ("dp_shard", [[0, 1], [2, 3]]), ("dp_replicate", [[0, 2], [1, 3]])
    assert over == {
        ("all_gather", "parameter all-gather"): shard,
        ("all_reduce", "gradient reduce-scatter"): shard,  # Gloo runs FSDP's reduce-scatter as an all-reduce
        ("all_reduce", "replicate all-reduce"): replicate,
    }
    assert {d.dimension for d in report.dimensions} == {"dp_shard", "dp_replicate"}


def test_a_groups_ranks_are_said_as_ranges():
    from commprof.render.groups_view import over, ranks_text

    assert [ranks_text(r) for r in (list(range(512)), [0, 2], [0, 1], [0, 1, 2, 3, 8, 9, 10, 11])] == [
        "0-511",
        "0,2",
        "0,1",
        "0-3,8-11",
    ]
    assert over("tp", [[0, 1], [2, 3]]) == "tp 0,1 2,3" and over(None, []) == "-"
    assert over("dp", [[r, r + 8] for r in range(8)]) == "dp (8 groups of 2)"


def test_a_group_the_script_made_without_a_description_is_its_own():
    """new_group() describes its groups 'undefined': two of them (a DDP over each half) are two, not one."""
    from commprof.analysis.groups import label_of

    halves = (ProcessGroup("1", "undefined", (0, 1)), ProcessGroup("2", "undefined", (2, 3)))
    rank = _rank([1000.0], groups=halves)
    calls = [dataclasses.replace(rank.collectives[0], process_group=name) for name in ("1", "2")]
    assert [label_of(rank, c) for c in calls] == [("group 1", (0, 1)), ("group 2", (2, 3))]


def test_fsdps_resharding_is_said_of_the_dimension_it_shards_over(analysed):
    """On dp=2 x tp=2, FSDP shards over dp's 2 ranks: kept whole, a block's parameters cost each rank half of them
    more (not three quarters, as sharding over all 4 would)."""
    report, _, _ = analysed
    (reshard,) = [f for f in report.findings + report.within_noise if f.kind == "fsdp_reshard"]
    assert reshard.facts.dimension == "dp"
    parameters = sum(b.parameters for b in report.run.job.built if b.kind == "fsdp")
    assert reshard.facts.kept_bytes == parameters * 4 / 2
