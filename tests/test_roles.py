"""What each collective is for and when in its step it was launched (issue 20): hand-built traces whose every
launch can be placed by eye."""

from commprof.analysis.analyze import analyze
from commprof.trace.load import load_run
from tests.tracebuilder import GLOO, TraceBuilder


def fsdp_cpu_trace():
    """One step [0,200] of FSDP2 over Gloo, a root and one block labelled "0":
    forward: the root's all-gather launched at 5, block 0's at 25 (prefetched inside the root's pre_forward range);
    backward from 100: block 0's parameters gathered again at 105, its gradient reduce-scattered at 130 (Gloo runs
    it as an all-reduce; the launch op names the reduce-scatter), the root's at 150;
    optimizer [170,190]: an all-reduce launched at 175 (a gradient-norm clip, say)."""
    b = TraceBuilder().step(1, 0, 200)
    b.x("FSDP::root_pre_forward", 1, 40, cat="user_annotation")
    b.x("FSDP::all_gather", 4, 10, cat="user_annotation").x("c10d::_allgather_base_", 5, 2)
    b.x("FSDP::pre_forward (0)", 20, 20, cat="user_annotation")
    b.x("FSDP::all_gather (0)", 24, 10, cat="user_annotation").x("c10d::_allgather_base_", 25, 2)
    b.x("autograd::engine::evaluate_function: AddmmBackward0", 100, 10)
    b.x("FSDP::pre_backward (0)", 104, 10, cat="user_annotation")
    b.x("FSDP::all_gather (0)", 104, 8, cat="user_annotation").x("c10d::_allgather_base_", 105, 2)
    b.x("FSDP::post_backward_reduce (0)", 128, 10, cat="user_annotation").x("c10d::_reduce_scatter_base_", 130, 2)
    b.x("FSDP::post_backward_reduce", 148, 10, cat="user_annotation").x("c10d::_reduce_scatter_base_", 150, 2)
    b.x("Optimizer.step#SGD.step", 170, 20, cat="user_annotation").x("c10d::allreduce_", 175, 2)
    for ts, name in (
        (8, "gloo:all_gather"),
        (28, "gloo:all_gather"),
        (108, "gloo:all_gather"),
        (133, "gloo:all_reduce"),
        (153, "gloo:all_reduce"),
        (178, "gloo:all_reduce"),
    ):
        b.x(name, ts, 4, cat="user_annotation", thread=GLOO, Input_Dims=[[1000]], Input_type=["float"])
    return b


def test_fsdp_collectives_named_by_purpose_phase_and_module(tmp_path):
    (rank,) = load_run([fsdp_cpu_trace().write(tmp_path / "rank0.pt.trace.json")]).ranks
    assert [(c.start, c.op, c.phase, c.purpose, c.module) for c in rank.collectives] == [
        (8, "all_gather", "forward", "parameter all-gather", "root"),
        (28, "all_gather", "forward", "parameter all-gather", "0"),
        (108, "all_gather", "backward", "parameter all-gather", "0"),
        (133, "all_reduce", "backward", "gradient reduce-scatter", "0"),
        (153, "all_reduce", "backward", "gradient reduce-scatter", "root"),
        (178, "all_reduce", "optimizer", None, None),
    ]


def test_replicate_all_reduce_of_hybrid_sharding(tmp_path):
    b = TraceBuilder().step(1, 0, 100)
    b.x("autograd::engine::evaluate_function: AddmmBackward0", 10, 10)
    b.x("FSDP::post_backward_reduce (3)", 40, 20, cat="user_annotation")
    b.x("c10d::_reduce_scatter_base_", 41, 2).x("c10d::allreduce_", 50, 2)
    b.x("gloo:all_reduce", 44, 4, cat="user_annotation", thread=GLOO).x(
        "gloo:all_reduce", 53, 4, cat="user_annotation", thread=GLOO
    )
    (rank,) = load_run([b.write(tmp_path / "rank0.pt.trace.json")]).ranks
    assert [(c.purpose, c.module) for c in rank.collectives] == [
        ("gradient reduce-scatter", "3"),
        ("replicate all-reduce", "3"),
    ]


def test_ddp_gradient_all_reduces_are_in_the_backward(tmp_path):
    """No FSDP ranges: no purpose, but the phase: the bucket all-reduce launched after the first backward op."""
    b = TraceBuilder().step(1, 0, 100).step(2, 100, 100)
    for start in (0, 100):
        b.x("aten::mm", start + 5, 20).x("autograd::engine::evaluate_function: AddmmBackward0", start + 30, 20)
        b.x("c10d::allreduce_", start + 40, 2).x("gloo:all_reduce", start + 45, 10, cat="user_annotation", thread=GLOO)
    report = analyze(load_run([b.write(tmp_path / "rank0.pt.trace.json")]), "ddp", "analysis")
    (stats,) = report.collectives
    assert (stats.op, stats.phase, stats.purpose, stats.calls_per_step) == ("all_reduce", "backward", None, 1.0)


def test_gpu_kernels_take_the_role_of_their_launch(tmp_path):
    """NCCL kernels: the runtime call that launched each one sits inside the FSDP range on the training thread."""
    b = TraceBuilder(backend="nccl").step(1, 0, 100)
    b.x("FSDP::all_gather (2)", 10, 10, cat="user_annotation").launch(12, correlation=1)
    b.x("autograd::engine::evaluate_function: MmBackward0", 40, 10)
    b.x("FSDP::post_backward_reduce (2)", 60, 10, cat="user_annotation").launch(62, correlation=2)
    b.kernel("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage)", 200, 30, correlation=1)
    b.kernel("ncclDevKernel_ReduceScatter_Sum_f32_RING_LL(ncclDevKernelArgsStorage)", 260, 30, correlation=2)
    (rank,) = load_run([b.write(tmp_path / "rank0.pt.trace.json")]).ranks
    assert [(c.op, c.phase, c.purpose, c.module) for c in rank.collectives] == [
        ("all_gather", "forward", "parameter all-gather", "2"),
        ("reduce_scatter", "backward", "gradient reduce-scatter", "2"),
    ]


def test_each_step_broken_down_by_phase(tmp_path):
    """Step [0,100]: forward [0,30) holds aten::mm [5,25]; backward [30,70) the backward op [30,50] (less the
    all-reduce's launch [40,42]: 18 ms of compute) and gloo:all_reduce [45,55] (10 ms, 5 of them under the backward
    op); optimizer [70,100) aten::add_ [72,78] inside Optimizer.step [70,80] (an annotation, not computation)."""
    b = TraceBuilder().step(1, 0, 100)
    b.x("aten::mm", 5, 20).x("autograd::engine::evaluate_function: AddmmBackward0", 30, 20)
    b.x("c10d::allreduce_", 40, 2).x("gloo:all_reduce", 45, 10, cat="user_annotation", thread=GLOO)
    b.x("Optimizer.step#SGD.step", 70, 10, cat="user_annotation").x("aten::add_", 72, 6)
    report = analyze(load_run([b.write(tmp_path / "rank0.pt.trace.json")]), "phases", "analysis")
    shares = [
        (
            p.phase,
            *(round(v * 1000, 9) for v in (p.window_ms, p.compute_ms, p.comm_ms, p.overlap_ms, p.exposed_comm_ms)),
        )
        for p in report.phases
    ]
    assert shares == [("forward", 30, 20, 0, 0, 0), ("backward", 40, 18, 10, 5, 5), ("optimizer", 30, 6, 0, 0, 0)]  # µs
    assert report.steps[0].phases == report.phases  # one rank, one step


def test_fsdp_all_gathers_by_module_with_what_no_computation_hid(tmp_path):
    """aten::mm [26,30] (less the launch [25,27] that overlaps it: [27,30]) hides [28,30] of block 0's forward
    all-gather [28,32]: 2 of its 4 µs exposed. The backward op [100,110] (less its launch [105,107]) hides [108,110]
    of block 0's backward one [108,112]. Nothing hides the root's [8,12]."""
    trace = fsdp_cpu_trace().x("aten::mm", 26, 4)
    report = analyze(load_run([trace.write(tmp_path / "rank0.pt.trace.json")]), "fsdp", "analysis")
    assert [
        (g.module, g.phase, g.calls_per_step, round(g.ms * 1000, 9), round(g.exposed_ms * 1000, 9))
        for g in report.gathers
    ] == [("root", "forward", 1, 4, 4), ("0", "forward", 1, 4, 2), ("0", "backward", 1, 4, 2)]


def test_phase_of_a_launch_and_the_phase_windows_agree(tmp_path):
    """The optimizer phase runs from the step's first Optimizer.step to the step's end: an all-reduce launched at
    95, after Optimizer.step [80,90] ended, is the optimizer's, as the optimizer window [80,100] says."""
    b = TraceBuilder().step(1, 0, 100)
    b.x("autograd::engine::evaluate_function: AddmmBackward0", 20, 10)
    b.x("Optimizer.step#SGD.step", 80, 10, cat="user_annotation")
    b.x("c10d::allreduce_", 95, 1).x("gloo:all_reduce", 96, 3, cat="user_annotation", thread=GLOO)
    report = analyze(load_run([b.write(tmp_path / "rank0.pt.trace.json")]), "late", "analysis")
    (stats,) = report.collectives
    assert stats.phase == "optimizer"
    assert [(p.phase, round(p.window_ms * 1000, 9), round(p.comm_ms * 1000, 9)) for p in report.phases] == [
        ("forward", 20, 0),
        ("backward", 60, 0),
        ("optimizer", 20, 3),
    ]
