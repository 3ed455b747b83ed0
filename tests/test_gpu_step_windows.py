"""GPU step windows: memcpys at a step's start, work carried over from before, an empty trailing step.

One hand-built rank; every interval below can be checked by eye."""

import pytest

from commprof.analysis.analyze import analyze
from commprof.analysis.whole_trace import whole_trace
from commprof.trace.load import load_run
from tests.tracebuilder import TraceBuilder

NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"


def pipelined() -> TraceBuilder:
    """CPU steps #1 [0, 100], #2 [100, 200], #3 [200, 210] (launches nothing).

    - a kernel whose launch is not in the trace (still running from before the profiler started): [40, 70];
    - step 1 launches a host-to-device memcpy at 5 -> [50, 60], a kernel at 10 -> [65, 140] and, on a second
      stream, a kernel at 30 -> [145, 165];
    - step 2 launches a memcpy at 105 -> [150, 155], a kernel at 110 -> [160, 200] and an all-reduce at 120 ->
      [170, 260].

    The device's step 1 begins with its memcpy at 50 and lasts until step 2 begins at 150; step 2 lasts until its
    own work ends at 260. Step 1: compute [50, 140] + [145, 150] = 95 (20 of it, [50, 70], carried over), idle 5.
    Step 2: compute [150, 200] = 50 (15 carried over: [150, 165]), all-reduce 90, overlap [170, 200] = 30,
    exposed 60, idle 0."""
    b = TraceBuilder(rank=0, world_size=2, backend="nccl").step(1, 0, 100).step(2, 100, 100).step(3, 200, 10)
    b.kernel("sm80_xmma_gemm_f32f32", 40, 30, correlation=99)
    b.launch(5, 1).x("Memcpy HtoD (Pageable -> Device)", 50, 10, cat="gpu_memcpy", thread=(0, 7), correlation=1)
    b.launch(10, 2).kernel("sm80_xmma_gemm_f32f32", 65, 75, 2)
    b.launch(30, 3).kernel("vectorized_elementwise_kernel", 145, 20, 3, stream=8)
    b.launch(105, 4).x("Memcpy HtoD (Pageable -> Device)", 150, 5, cat="gpu_memcpy", thread=(0, 7), correlation=4)
    b.launch(110, 5).kernel("sm80_xmma_gemm_f32f32", 160, 40, 5)
    b.launch(120, 6).kernel(
        NCCL,
        170,
        90,
        6,
        stream=9,
        Collective_name="allreduce",
        In_msg_nelems=1024,
        Out_msg_nelems=1024,
        dtype="Float",
        Group_size=2,
    )
    return b


def test_device_steps_tile_the_timeline_and_carry_work_over(tmp_path):
    (rank,) = load_run([pipelined().write(tmp_path / "r.json")], workers=1).ranks
    assert [(s.name, s.start, s.end, s.carried_over_us) for s in rank.steps] == [
        ("ProfilerStep#1", 50, 150, 20),
        ("ProfilerStep#2", 150, 260, 15),
    ]
    assert rank.empty_steps == ("ProfilerStep#3",)


def test_breakdown_of_the_device_steps(tmp_path):
    report = analyze(load_run([pipelined().write(tmp_path / "r.json")], workers=1), "t", "analysis")
    first, second = report.steps
    assert (first.window_ms, first.compute_ms, first.idle_ms, first.memory_ms, first.carried_over_ms) == pytest.approx(
        (0.100, 0.095, 0.005, 0.010, 0.020)
    )
    assert (
        second.window_ms,
        second.compute_ms,
        second.comm_ms,
        second.overlap_ms,
        second.exposed_comm_ms,
        second.idle_ms,
        second.carried_over_ms,
    ) == pytest.approx((0.110, 0.050, 0.090, 0.030, 0.060, 0.0, 0.015))
    (summary,) = report.ranks
    assert summary.steps == 2 and summary.step_time_ms.median == pytest.approx(0.105)  # the empty step is no step
    assert report.empty_steps == {"0": ["ProfilerStep#3"]}


def test_idle_leaves_out_copies_that_run_alone(tmp_path):
    """A memcpy under no kernel keeps the device busy: it is 'copies', not idle."""
    b = TraceBuilder(rank=0, world_size=1, backend="nccl").step(1, 0, 100)
    b.launch(1, 1).x("Memcpy HtoD (Pageable -> Device)", 10, 20, cat="gpu_memcpy", thread=(0, 7), correlation=1)
    b.launch(2, 2).kernel("sm80_xmma_gemm_f32f32", 40, 60, 2)
    (rank,) = analyze(load_run([b.write(tmp_path / "r.json")], workers=1), "t", "analysis").ranks
    assert (rank.step_time_ms.mean, rank.compute_ms, rank.memory_only_ms, rank.idle_ms) == pytest.approx(
        (0.090, 0.060, 0.020, 0.010)
    )


def test_hta_view_keeps_only_work_launched_before_the_last_step(tmp_path):
    """HTA drops the kernel without a launch and step 2's work (launched in the last step with a launch):
    window [50, 165], compute [65, 140] + [145, 165] = 95, memcpy [50, 60] busy, idle [60, 65] + [140, 145]."""
    b = pipelined()
    b.events = [e for e in b.events if e["name"] != "ProfilerStep#3"]  # step 2 is then the last
    (rank,) = load_run([b.write(tmp_path / "r.json")], workers=1).ranks
    ours = whole_trace(rank)
    assert (ours.window_us, ours.compute_us, ours.idle_us, ours.non_compute_us) == pytest.approx((115, 95, 10, 10))
