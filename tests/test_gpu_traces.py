"""Hand-built GPU traces for the GPU paths: a CPU backend next to CUDA kernels, and a CPU running ahead of
the GPU by a known lag (every time in the breakdown and the bucket timeline must be a GPU time)."""

import pytest

from commprof.analysis.analyze import analyze
from commprof.analysis.buckets import backward_times, bucket_timelines
from commprof.analysis.predict import step_profile
from commprof.trace.load import load_run
from tests.tracebuilder import GLOO, TraceBuilder

LAG = 1000.0  # the GPU runs each kernel 1 ms after the CPU launched it (or later, when busy)
NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"


def lagging_trace() -> TraceBuilder:
    """CPU step [0, 500]: forward kernel launched at 50, backward from 100 (autograd op) with gradient kernels
    launched at 100, 150, 200; DDP launches bucket 0's all-reduce at 160 (after the second gradient kernel)
    and bucket 1's at 210; it copies the reduced buckets back at 220-230 (a copy kernel launched at 225).

    On the GPU: forward [1050, 1100]; gradients [1100, 1200], [1200, 1300], [1300, 1400]; all-reduce 0 on
    stream 9 [1300, 1450] (ready at 1300, when the kernels launched before it were done); all-reduce 1
    [1450, 1550] (ready 1400); the copy [1550, 1560]. Backward on the GPU: 1100 to 1560."""
    b = TraceBuilder(rank=0, world_size=2, backend="nccl").step(3, 0, 500)
    b.x("autograd::engine::evaluate_function: AddmmBackward0", 100, 120)
    b.x("torch.distributed.ddp.reducer::copy_bucket_to_grad", 220, 10)
    for correlation, (cpu, gpu_start, gpu_end) in enumerate(
        [(50, 1050, 1100), (100, 1100, 1200), (150, 1200, 1300), (200, 1300, 1400), (225, 1550, 1560)], start=1
    ):
        b.launch(cpu, correlation).kernel("volta_sgemm_128x64_nn", gpu_start, gpu_end - gpu_start, correlation)
    for correlation, (cpu, gpu_start, gpu_end) in ((11, (160, 1300, 1450)), (12, (210, 1450, 1550))):
        b.launch(cpu, correlation).kernel(
            NCCL,
            gpu_start,
            gpu_end - gpu_start,
            correlation,
            stream=9,
            Collective_name="allreduce",
            In_msg_nelems=1024,
            Out_msg_nelems=1024,
            dtype="Float",
            Group_size=2,
        )
    return b


def test_bucket_timeline_is_on_the_gpu_clock(tmp_path):
    (rank,) = load_run([lagging_trace().write(tmp_path / "r.json")], workers=1).ranks
    assert rank.steps[0].start == 1050 and rank.steps[0].end == 1560  # the GPU step window
    assert rank.backward_starts == (1100,) and rank.backward_ends == (1560,)
    assert [c.ready for c in rank.collectives] == [1300, 1400]
    (timeline,) = bucket_timelines(rank)
    assert [t for b in timeline for t in (b.ready_ms, b.start_ms, b.end_ms)] == pytest.approx(
        [0.2, 0.2, 0.35, 0.3, 0.35, 0.45]
    )
    times = backward_times(rank)  # DDP's own three figures, from the same GPU times
    assert (times.compute_ms, times.comm_ms, times.overlap_ms) == pytest.approx((0.3, 0.46 - 0.2, 0.1))


def test_a_step_that_launched_nothing_leaves_the_next_ones_backward_in_place(tmp_path):
    """A ProfilerStep before the lagging one that launched no device work is not a step of the device: the
    backward start and end of the step that is stay with it (they were the empty step's, and its bucket timeline
    was lost)."""
    trace = lagging_trace().step(2, -100, 90)
    (rank,) = load_run([trace.write(tmp_path / "r.json")], workers=1).ranks
    assert rank.empty_steps == ("ProfilerStep#2",) and [s.name for s in rank.steps] == ["ProfilerStep#3"]
    assert rank.backward_starts == (1100,) and rank.backward_ends == (1560,)
    (timeline,) = bucket_timelines(rank)
    assert [b.ready_ms for b in timeline] == pytest.approx([0.2, 0.3])


def test_prediction_profile_is_on_the_gpu_clock(tmp_path):
    profile = step_profile(load_run([lagging_trace().write(tmp_path / "r.json")], workers=1))
    # before backward 1050 -> 1100; backward 1100 -> last bucket ready 1400; all-reduces end 1550: exposed
    # 0.15 ms after the last bucket; the step ends at 1560: 0.01 ms tail
    assert (profile.before_backward_ms, profile.backward_ms, profile.exposed_ms, profile.tail_ms) == pytest.approx(
        (0.05, 0.3, 0.15, 0.01)
    )
    assert profile.bucket_ready == pytest.approx([2 / 3, 1.0])  # of the backward pass, when each was ready


def gloo_after_a_kernel(gloo_us: float) -> TraceBuilder:
    """Gloo all-reduces CUDA tensors on the host: CPU step [0, 300]; a kernel launched at 10 runs at [100, 200];
    Gloo's range on its worker thread from 200 for `gloo_us`, after the c10d op at 190."""
    return (
        TraceBuilder(rank=0, world_size=2, backend="gloo")
        .step(1, 0, 300)
        .launch(10, 1)
        .kernel("volta_sgemm_128x64_nn", 100, 100, 1)
        .x("c10d::allreduce_", 190, 5)
        .x(
            "gloo:all_reduce",
            200,
            gloo_us,
            cat="user_annotation",
            thread=GLOO,
            Input_Dims=[[1024]],
            Input_type=["float"],
        )
    )


def gloo_on_gpu_trace() -> TraceBuilder:
    """Gloo's range [200, 380], and a second kernel launched at 250 that runs at [400, 450]."""
    return (
        gloo_after_a_kernel(180)
        .launch(250, 2)
        .kernel("vectorized_elementwise_kernel", 400, 50, 2)
        .x("Memcpy DtoH (Device -> Pageable)", 195, 5, cat="gpu_memcpy", thread=(0, 7))
    )


def test_gloo_next_to_cuda_kernels_is_communication(tmp_path):
    report = analyze(load_run([gloo_on_gpu_trace().write(tmp_path / "r.json")], workers=1), "g", "analysis")
    (rank,) = report.ranks
    assert rank.kind == "gpu" and rank.step_time_ms.median == pytest.approx(0.35)  # GPU window [100, 450]
    assert (rank.compute_ms, rank.comm_ms, rank.overlap_ms) == pytest.approx((0.15, 0.18, 0.0))
    assert rank.idle_ms == pytest.approx(0.35 - 0.15 - 0.18)
    (call,) = report.collectives
    assert (call.op, call.backend, call.bytes) == ("all_reduce", "gloo", 4096)


def test_gloo_that_ends_after_the_last_kernel_counts_in_its_step(tmp_path):
    """The step's only kernel runs [100, 200]; Gloo's all-reduce, launched at 190 inside the CPU step, runs on the
    host [200, 3200] after it: the step window reaches its end, and its 3.0 ms are communication (not 0.0)."""
    trace = gloo_after_a_kernel(3000)
    report = analyze(load_run([trace.write(tmp_path / "r.json")], workers=1), "g", "analysis")
    (rank,) = report.ranks
    assert rank.step_time_ms.median == pytest.approx(3.1)  # [100, 3200]
    assert (rank.compute_ms, rank.comm_ms, rank.exposed_comm_ms) == pytest.approx((0.1, 3.0, 3.0))
