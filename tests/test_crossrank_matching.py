"""Every collective matched across ranks (all_to_all run as SendRecv kernels, send/recv pairs), and the straggler
named by the waiting it costs the others. Hand-built GPU ranks on one host, one step [0, 1000] each."""

import pytest

from commprof.analysis.analyze import analyze
from commprof.trace.load import load_run
from tests.tracebuilder import TraceBuilder

SENDRECV = "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclWorkElem)"
ALLREDUCE = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)"

# (op, start on ranks 0..3, common end)
CALLS = [
    ("all_to_all", (100, 110, 300, 120), 400),  # rank 2 last: the others wait 200, 190 and 180, 190 each on average
    ("all_reduce", (500, 600, 510, 520), 700),  # rank 1 last: 100, 90, 80: 90
    ("all_reduce", (800, 805, 810, 850), 900),  # rank 3 last: 50, 45, 40: 45
    ("all_reduce", (920, 921, 922, 925), 950),  # rank 3 last again: 5, 4, 3: 4
]


def four_ranks(tmp_path):
    """Older Kineto: the kernels name nothing; each launch sits inside its nccl:<op> range."""
    for rank in range(4):
        b = TraceBuilder(rank=rank, world_size=4, backend="nccl").step(1, 0, 1000)
        b.header["host_name"] = "node-a"
        for i, (op, starts, end) in enumerate(CALLS, start=1):
            launch = 10 * i
            b.x(f"nccl:{op}", launch - 2, 5, cat="user_annotation", Input_Dims=[[1024]], Input_type=["float"])
            b.launch(launch, i).kernel(
                SENDRECV if op == "all_to_all" else ALLREDUCE, starts[rank], end - starts[rank], i
            )
        b.write(tmp_path / f"rank{rank}.json")
    return analyze(load_run([tmp_path], workers=1), "t", "analysis").cross_rank


def test_the_straggler_is_the_rank_that_costs_the_others_most_waiting(tmp_path):
    skew = four_ranks(tmp_path)
    assert skew.matched_collectives == 4 and skew.unmatched_calls == 0  # the all_to_all too
    caused = {r.rank: r.wait_caused_ms for r in skew.ranks}
    # what each costs the job: the others' mean wait, not their sum (which grows with the number of ranks)
    assert caused == pytest.approx({0: 0.0, 1: 0.090, 2: 0.190, 3: 0.049})
    assert {r.rank: r.last_arrivals for r in skew.ranks} == {0: 0, 1: 1, 2: 1, 3: 2}  # rank 3 last most often
    assert skew.straggler == 2 and skew.straggler_cost_ms == pytest.approx(0.190)
    assert skew.straggler_ops == pytest.approx({"all_to_all": 0.190})
    assert skew.straggler_steps == pytest.approx({"ProfilerStep#1": 0.190})
    assert skew.straggler_late_ms == pytest.approx(0.190)  # 300 - median(100, 110, 120)
    assert {r.rank: r.wait_ms for r in skew.ranks} == pytest.approx(
        {0: 0.355, 1: 0.190 + 0 + 0.045 + 0.004, 2: 0 + 0.090 + 0.040 + 0.003, 3: 0.180 + 0.080 + 0 + 0}
    )


def p2p_rank(rank: int, calls) -> TraceBuilder:
    b = TraceBuilder(rank=rank, world_size=2, backend="nccl").step(1, 0, 1000)
    b.header["host_name"] = "node-a"
    for correlation, (name, peer, start, end) in enumerate(calls, start=1):
        peer_arg = {"Dst_Rank": peer} if name == "send" else {"Src_Rank": peer} if name == "recv" else {}
        args = dict(Collective_name=name, In_msg_nelems=256, Out_msg_nelems=256, dtype="Float", Group_size=2)
        b.launch(correlation, correlation).kernel(SENDRECV, start, end - start, correlation, **args, **peer_arg)
    return b


def test_send_and_recv_are_matched_as_pairs(tmp_path):
    """Rank 0 sends to 1 ([100, 200]; rank 1 receives [150, 200]), then receives from 1 ([250, 400]; rank 1 sends
    [300, 400]); rank 0 also runs a send/recv kernel that names no peer: it cannot be paired."""
    p2p_rank(0, [("send", 1, 100, 200), ("recv", 1, 250, 400), ("sendrecv", None, 500, 510)]).write(tmp_path / "0.json")
    p2p_rank(1, [("recv", "0", 150, 200), ("send", "0", 300, 400)]).write(tmp_path / "1.json")  # ranks as strings
    skew = analyze(load_run([tmp_path], workers=1), "t", "analysis").cross_rank
    assert skew.matched_collectives == 2 and skew.unmatched_calls == 1
    r0, r1 = skew.ranks
    assert (r0.wait_ms, r1.wait_ms) == pytest.approx((0.100, 0.0))  # rank 0 is early both times
    assert (r0.transfer_ms, r1.transfer_ms) == pytest.approx((0.150, 0.150))
    assert skew.straggler == 1 and skew.straggler_ops == pytest.approx({"send_recv": 0.100})
