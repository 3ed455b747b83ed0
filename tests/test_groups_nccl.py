"""The GPU path of issue 70, on hand-built NCCL traces whose answer is known: 4 ranks on a dp=2 x tp=2 mesh whose
kernels and `record_param_comms` ranges name their process group, its description and its ranks, as NCCL's traces
do. Each step every rank runs a tp all-reduce and then a dp all-reduce; rank 3 reaches its tp all-reduce 300 us late
every step, so rank 2, its tp partner, waits 300 us in it, and ranks 0 and 1 wait for no one. The traces name no host:
their clocks are aligned on the collectives each pair shares (rank 3 shares none with rank 0)."""

import json

import pytest

from commprof.commands.reporting import report_from_traces
from tests.tracebuilder import TraceBuilder

ALLREDUCE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"
DP = {0: ("1", [0, 2]), 1: ("2", [1, 3]), 2: ("1", [0, 2]), 3: ("2", [1, 3])}  # rank -> its group's name, members
TP = {0: ("3", [0, 1]), 1: ("3", [0, 1]), 2: ("4", [2, 3]), 3: ("4", [2, 3])}  # as torch names a mesh's groups
STEPS, STEP_US, LATE_US = 4, 1000.0, 300.0
ELEMENTS = 262144  # 1 MiB of floats


def _rank_trace(rank: int) -> TraceBuilder:
    b = TraceBuilder(rank=rank, world_size=4, backend="nccl", base_ns=1_000_000_000)
    b.header["distributedInfo"]["pg_config"] = [
        {"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl", "ranks": [0, 1, 2, 3]},
        {"pg_name": DP[rank][0], "pg_desc": "mesh_dp", "ranks": DP[rank][1]},
        {"pg_name": TP[rank][0], "pg_desc": "mesh_tp", "ranks": TP[rank][1]},
    ]
    correlation = 1
    for step in range(STEPS):
        t0 = step * STEP_US
        b.step(step + 1, t0, STEP_US)
        b.x("aten::mm", t0 + 10, 50, External_id=correlation)  # the step's computation on the host
        b.launch(t0 + 20, correlation).kernel("sgemm_128x64", t0 + 20, 60, correlation)
        correlation += 1
        tp_start = t0 + 100 + (LATE_US if rank == 3 else 0.0)
        tp_end = t0 + 150 + LATE_US if rank in (2, 3) else t0 + 150  # rank 2 waits in it for rank 3
        for (name, members), desc, start, end in (
            (TP[rank], "mesh_tp", tp_start, tp_end),
            (DP[rank], "mesh_dp", t0 + 600, t0 + 650),
        ):
            args = {
                "Collective name": "allreduce",
                "In msg nelems": ELEMENTS,
                "Out msg nelems": ELEMENTS,
                "dtype": "Float",
                "Group size": 2,
                "Process Group Name": name,
                "Process Group Description": desc,
                "Process Group Ranks": json.dumps(members),
            }
            b.x(
                "record_param_comms",
                start - 5,
                4,
                External_id=correlation,
                **{k.replace(" ", "_"): v for k, v in args.items()},
            )
            b.launch(start - 3, correlation).kernel(
                ALLREDUCE,
                start,
                end - start,
                correlation,
                stream=20,
                **{k.replace(" ", "_"): v for k, v in args.items()},
            )
            correlation += 1
    return b


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    folder = tmp_path_factory.mktemp("nccl-mesh")
    for rank in range(4):
        _rank_trace(rank).write(folder / f"rank{rank}.pt.trace.json")
    return report_from_traces([folder], "nccl-mesh", "analysis", workers=1)[0]


def test_each_kernel_is_in_the_group_its_args_name_with_that_groups_busbw(report):
    rows = {(c.group, c.op): c for c in report.collectives}
    assert set(rows) == {("tp", "all_reduce"), ("dp", "all_reduce")}
    assert rows[("tp", "all_reduce")].group_ranks == [[0, 1], [2, 3]]
    assert rows[("dp", "all_reduce")].group_ranks == [[0, 2], [1, 3]]
    dp = rows[("dp", "all_reduce")]
    assert dp.busbw_gbps == pytest.approx(ELEMENTS * 4 / 50e-6 / 1e9 * 2 * (2 - 1) / 2)  # 50 us over 2 ranks
    assert {d.dimension: d.calls_per_step for d in report.dimensions} == {"tp": 1.0, "dp": 1.0}


def test_a_rank_late_in_its_tp_group_costs_its_partner_alone(report):
    waits = {r.rank: r.wait_ms for r in report.cross_rank.ranks}
    assert waits[2] == pytest.approx(LATE_US / 1e3, abs=0.01)
    assert waits[0] == pytest.approx(0, abs=0.01) and waits[1] == pytest.approx(0, abs=0.01)
    assert report.cross_rank.straggler == 3
    assert report.cross_rank.matched_collectives == 2 * 2 * STEPS  # per step 2 tp pairs and 2 dp pairs


def test_clocks_are_aligned_through_the_groups_each_rank_shares(report):
    """Rank 3's tp group ends 300 us after rank 0's: aligning on it would shift the clocks; dp ends together."""
    assert {r.rank: r.clock_offset_us for r in report.cross_rank.ranks} == {0: 0.0, 1: 0.0, 2: 0.0, 3: 0.0}


def test_two_groups_of_one_name_on_different_ranks_are_not_one_group(tmp_path):
    """Were both tp groups named alike (as some torch versions name split groups), each is still its own pair."""
    for rank in range(4):
        b = _rank_trace(rank)
        for event in b.events:
            if event.get("args", {}).get("Process Group Name") == "4":
                event["args"]["Process Group Name"] = "3"
        b.header["distributedInfo"]["pg_config"][2]["pg_name"] = "3"
        b.write(tmp_path / f"rank{rank}.pt.trace.json")
    report = report_from_traces([tmp_path], "alike", "analysis", workers=1)[0]
    waits = {r.rank: r.wait_ms for r in report.cross_rank.ranks}
    assert waits[2] == pytest.approx(LATE_US / 1e3, abs=0.01) and waits[0] == pytest.approx(0, abs=0.01)
