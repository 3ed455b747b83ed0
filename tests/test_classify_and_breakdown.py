"""Hand-built traces whose every interval is checked by eye (times in microseconds)."""

import pytest

from commprof.analysis.analyze import analyze
from commprof.analysis.breakdown import breakdown_step, step_windows
from commprof.trace.load import load_run
from tests.tracebuilder import GLOO, TraceBuilder


def cpu_trace(rank=0):
    # Step 1 [0,100]: compute = [0,30] + ([40,70] minus the nested launch [50,55]) + [85,95] = 65
    # comm = gloo:all_reduce [52,90] = 38; overlap = [55,70] + [85,90] = 20; exposed 18; idle 100-83 = 17
    # The annotation Optimizer.step [84,96] is not computation; the cpu_op inside it [85,95] is.
    # Step 2 [100,200]: compute 50, nothing else (its optimizer step, an annotation, is not computation: a step
    # that stepped no optimizer after steps that did would be the range left open at the job's end, not a step).
    return (
        TraceBuilder(rank=rank)
        .step(1, 0, 100)
        .step(2, 100, 100)
        .x("aten::mm", 0, 30)
        .x("autograd::engine::evaluate_function: AddmmBackward0", 40, 30)
        .x("c10d::allreduce_", 50, 5)
        .x("Optimizer.step#SGD.step", 84, 12, cat="user_annotation")
        .x("aten::add_", 85, 10)
        .x("gloo:all_reduce", 52, 38, cat="user_annotation", thread=GLOO, Input_Dims=[[1000]], Input_type=["float"])
        .x("aten::mm", 100, 50)
        .x("Optimizer.step#SGD.step", 160, 1, cat="user_annotation")
        .x("aten::mm", 250, 10)
    )  # outside every step: ignored


def test_cpu_breakdown_exact(tmp_path):
    run = load_run([cpu_trace().write(tmp_path / "rank0.pt.trace.json")])
    rank = run.ranks[0]
    first, second = (breakdown_step(rank, w) for w in step_windows(rank))
    assert (first.window_ms, first.compute_ms, first.comm_ms) == pytest.approx((0.100, 0.065, 0.038))
    assert (first.overlap_ms, first.exposed_comm_ms, first.idle_ms) == pytest.approx((0.020, 0.018, 0.017))
    assert (second.compute_ms, second.comm_ms, second.idle_ms) == pytest.approx((0.050, 0.0, 0.050))


def test_cpu_collectives_table(tmp_path):
    report = analyze(load_run([cpu_trace().write(tmp_path / "rank0.json")]), "t", "analysis")
    (call,) = report.collectives
    assert (call.op, call.backend, call.dtype, call.bytes, call.group_size, call.count) == (
        "all_reduce",
        "gloo",
        "float",
        4000,
        2,
        1,
    )
    assert call.calls_per_step == 0.5
    assert call.mean_ms == pytest.approx(0.038)
    assert call.algbw_gbps == pytest.approx(4000 / 38e-6 / 1e9)
    assert call.busbw_gbps == pytest.approx(call.algbw_gbps * 2 * (2 - 1) / 2)
    assert call.hidden_pct == pytest.approx(100 * 20 / 38)  # [55,70] + [85,90] of [52,90] beside computation
    summary = report.ranks[0]
    assert summary.step_time_ms.mean == pytest.approx(summary.compute_ms + summary.exposed_comm_ms + summary.idle_ms)
    assert summary.compute_ms == pytest.approx((0.065 + 0.050) / 2)


def gpu_trace(comm_kernel="ncclDevKernel_AllReduce_RING_LL(ncclDevKernelArgsStorage)", **kernel_args):
    # CPU step [0,50] launches kernels 1,2,3. GPU window = [100,230].
    # compute = [100,160] + [210,230] = 80; comm = [150,200] = 50; overlap = [150,160] = 10
    # exposed = 40; memory = memcpy [200,205] = 5 (the memcpy has no launch: not the step's own, so it does not
    # move the window); idle = 130 - (80 + 50 - 10) - 5 = 5
    return (
        TraceBuilder(rank=1, world_size=4, backend="nccl")
        .step(5, 0, 50)
        .launch(10, correlation=1)
        .launch(20, correlation=2, external_id=99)
        .launch(30, correlation=3)
        .x(
            "record_param_comms",
            18,
            7,
            External_id=99,
            Collective_name="allreduce",
            In_msg_nelems=256,
            Out_msg_nelems=256,
            dtype="Float",
            Group_size=4,
        )
        .kernel("volta_sgemm_128x64_nn", 100, 60, correlation=1)
        .kernel(comm_kernel, 150, 50, correlation=2, stream=9, **kernel_args)
        .kernel("vectorized_elementwise_kernel", 210, 20, correlation=3)
        .x("Memcpy DtoD", 200, 5, cat="gpu_memcpy", thread=(0, 7))
    )


def test_gpu_breakdown_uses_device_window(tmp_path):
    report = analyze(load_run([gpu_trace().write(tmp_path / "t.json")]), "t", "analysis")
    (rank,) = report.ranks
    assert rank.kind == "gpu" and rank.rank == 1
    assert rank.step_time_ms.median == pytest.approx(0.130)
    assert (rank.compute_ms, rank.comm_ms, rank.overlap_ms) == pytest.approx((0.080, 0.050, 0.010))
    assert (rank.exposed_comm_ms, rank.idle_ms, rank.memory_ms) == pytest.approx((0.040, 0.005, 0.005))
    assert rank.memory_only_ms == pytest.approx(0.005) and rank.carried_over_ms == pytest.approx(0.005)


def test_gpu_collective_metadata_from_cpu_op_by_correlation(tmp_path):
    report = analyze(load_run([gpu_trace().write(tmp_path / "t.json")]), "t", "analysis")
    (call,) = report.collectives
    assert (call.op, call.dtype, call.bytes, call.group_size) == ("all_reduce", "Float", 1024, 4)
    assert call.algbw_gbps == pytest.approx(1024 / 50e-6 / 1e9)
    assert call.busbw_gbps == pytest.approx(call.algbw_gbps * 2 * 3 / 4)
    assert call.hidden_pct == pytest.approx(100 * 10 / 50)  # [150,160] of the kernel's [150,200]


@pytest.mark.parametrize(
    "name",
    [
        "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
        "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
        "ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)",
        "ncclAllReduceRingLLKernel_sum_f32(ncclColl)",
    ],
)
def test_every_nccl_kernel_naming_is_communication(tmp_path, name):
    report = analyze(load_run([gpu_trace(name).write(tmp_path / "t.json")]), "t", "analysis")
    assert report.ranks[0].comm_ms == pytest.approx(0.050)
    assert report.collectives[0].op == "all_reduce"  # from the kernel name or the CPU-side op


def test_kernel_args_win_over_cpu_op(tmp_path):
    path = gpu_trace(
        Collective_name="allgather", In_msg_nelems=64, Out_msg_nelems=256, dtype="BFloat16", Group_size=4
    ).write(tmp_path / "t.json")
    (call,) = analyze(load_run([path]), "t", "analysis").collectives
    assert (call.op, call.bytes, call.dtype) == ("all_gather", 512, "BFloat16")
    assert call.busbw_gbps == pytest.approx(call.algbw_gbps * 3 / 4)


def test_no_step_markers_means_one_window(tmp_path):
    trace = TraceBuilder().x("aten::mm", 10, 20).x("gloo:all_reduce", 25, 15, cat="user_annotation", thread=GLOO)
    (rank,) = analyze(load_run([trace.write(tmp_path / "r.json")]), "t", "analysis").ranks
    assert rank.steps == 1
    assert (rank.step_time_ms.median, rank.compute_ms, rank.comm_ms, rank.overlap_ms) == pytest.approx(
        (0.030, 0.020, 0.015, 0.005)
    )


def test_relative_timestamps_keep_their_base(tmp_path):
    run = load_run(
        [
            cpu_trace()
            .__class__(base_ns=1_700_000_000_000_000_000)
            .step(1, 0, 10)
            .x("aten::mm", 0, 5)
            .write(tmp_path / "r.json")
        ]
    )
    assert run.ranks[0].base_us == 1_700_000_000_000_000.0


def test_rank_from_file_name_then_from_order(tmp_path):
    TraceBuilder(rank=None).x("aten::mm", 0, 5).write(tmp_path / "worker_rank3.json")
    TraceBuilder(rank=None).x("aten::mm", 0, 5).write(tmp_path / "b.json")
    run = load_run([tmp_path], workers=1)
    assert {r.path.rsplit("/", 1)[1]: r.rank for r in run.ranks} == {"b.json": 0, "worker_rank3.json": 3}
    warnings = [w for r in run.ranks for w in r.warnings]
    assert any("rank 3 taken from the file name" in w for w in warnings)
    assert any("assumed rank 0 from file order" in w for w in warnings)


def test_collectives_per_step(tmp_path):
    """Two ranks, two steps: the 1000-float all-reduce takes 38 and 42 µs in step 1 (mean 40), 18 and 22 in
    step 2 (mean 20); the mean over all four calls is 30 µs. busbw per step from that step's mean."""

    def rank_trace(rank, first_us, second_us):
        return (
            TraceBuilder(rank=rank)
            .step(1, 0, 100)
            .step(2, 100, 100)
            .x(
                "gloo:all_reduce",
                10,
                first_us,
                cat="user_annotation",
                thread=GLOO,
                Input_Dims=[[1000]],
                Input_type=["float"],
            )
            .x(
                "gloo:all_reduce",
                110,
                second_us,
                cat="user_annotation",
                thread=GLOO,
                Input_Dims=[[1000]],
                Input_type=["float"],
            )
        )

    paths = [rank_trace(0, 38, 18).write(tmp_path / "rank0.json"), rank_trace(1, 42, 22).write(tmp_path / "rank1.json")]
    (call,) = analyze(load_run(paths, workers=1), "t", "analysis").collectives
    assert (call.count, call.calls_per_step, call.mean_ms) == (4, 1.0, pytest.approx(0.030))
    assert [(s.step, s.mean_ms) for s in call.steps] == [
        ("ProfilerStep#1", pytest.approx(0.040)),
        ("ProfilerStep#2", pytest.approx(0.020)),
    ]
    assert [s.busbw_gbps for s in call.steps] == pytest.approx([4000 / 40e-6 / 1e9 * 2 * 1 / 2, 4000 / 20e-6 / 1e9])
