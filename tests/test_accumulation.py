"""Gradient accumulation (issue 30): one optimizer step is several micro-steps, forward, backward, forward, backward,
..., all but the last backward under DDP's no_sync. Each micro-step's forward counts as forward, each backward pass
as backward; the report says how many micro-steps make a step; the bucket model and DDP's own figures take the last
micro-step's backward, the one with the all-reduces. Hand-built traces whose every number can be checked by eye, and
a real script through `commprof run` (slow)."""

import pytest

from commprof.analysis.analyze import analyze
from commprof.analysis.buckets import backward_times, bucket_timelines
from commprof.analysis.predict import step_profile
from commprof.results.store import load_report
from commprof.trace.load import load_run
from tests.conftest import REPO, commprof_here
from tests.tracebuilder import GLOO, TRAIN, TraceBuilder

BACKWARD = "autograd::engine::evaluate_function: AddmmBackward0"
AUTOGRAD = (100, 300)  # the autograd engine's device thread on a GPU rank
NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"


def three_micro_steps_cpu() -> TraceBuilder:
    """Step [0,100] of three micro-steps: forward [0,10] backward [10,30], forward [30,40] backward [40,60] (both
    under no_sync), forward [60,70] backward [70,90], whose AccumulateGrad launches the bucket's all-reduce at 80
    (c10d::allreduce_ [80,82]; gloo:all_reduce [82,88] on Gloo's thread); optimizer [90,100] (aten::add_ inside
    Optimizer.step)."""
    b = TraceBuilder().step(1, 0, 100)
    for forward, backward in ((0, 10), (30, 40), (60, 70)):
        b.x("aten::linear", forward, 10).x(BACKWARD, backward, 20)
    b.x("c10d::allreduce_", 80, 2)
    b.x("gloo:all_reduce", 82, 6, cat="user_annotation", thread=GLOO, Input_Dims=[[1024]], Input_type=["float"])
    b.x("Optimizer.step#SGD.step", 90, 10, cat="user_annotation").x("aten::add_", 90, 10)
    return b


def three_micro_steps_gpu(operators: bool = True) -> TraceBuilder:
    """The same step on a GPU rank whose CPU runs far ahead: CPU step [0,20]; forward ops on the training thread
    [0,2], [4,6], [8,10], backward ops on the autograd thread [2,4], [6,8], [10,14]; Optimizer.step [14,16]. Each
    launches one kernel (at 1, 3, 5, 7, 9, 11, 15; the backward's from the autograd thread) that runs on the GPU at
    [1000,1010], [1010,1030], [1030,1040], [1040,1060], [1060,1070], [1070,1090], [1090,1100]; the last backward
    launches the all-reduce at 13, which runs at [1080,1088] on stream 9. On the device: forward [1000,1010],
    [1030,1040], [1060,1070] (30 us); backward [1010,1030], [1040,1060], [1070,1090] (60 us); optimizer [1090,1100]
    (10 us). `operators=False`: without the forward's operators, as commprof reads a GPU trace over 256 MB (the
    training thread's launches tell the forward then)."""
    b = TraceBuilder(backend="nccl").step(1, 0, 20)
    for forward, backward in ((0, 2), (4, 6), (8, 10)):
        if operators:
            b.x("aten::linear", forward, 2)
        b.x(BACKWARD, backward, 4 if backward == 10 else 2, thread=AUTOGRAD)
    b.x("Optimizer.step#SGD.step", 14, 2, cat="user_annotation")
    kernels = [(1, 1000, 1010), (3, 1010, 1030), (5, 1030, 1040), (7, 1040, 1060), (9, 1060, 1070), (11, 1070, 1090)]
    for correlation, (cpu, start, end) in enumerate([*kernels, (15, 1090, 1100)], start=1):
        thread = AUTOGRAD if cpu in (3, 7, 11) else TRAIN
        b.x("cudaLaunchKernel", cpu, 1, cat="cuda_runtime", thread=thread, correlation=correlation)
        b.kernel("volta_sgemm_128x64_nn", start, end - start, correlation)
    size = {"In_msg_nelems": 1024, "Out_msg_nelems": 1024, "dtype": "Float", "Group_size": 2}
    b.x("cudaLaunchKernel", 13, 1, cat="cuda_runtime", thread=AUTOGRAD, correlation=20)
    b.kernel(NCCL, 1080, 8, 20, stream=9, Collective_name="allreduce", **size)
    return b


def three_micro_steps_gpu_lean() -> TraceBuilder:
    return three_micro_steps_gpu(operators=False)


def shares(phases) -> list[tuple]:
    """Each phase's figures in microseconds."""
    return [
        (
            p.phase,
            *(round(v * 1000, 9) for v in (p.window_ms, p.compute_ms, p.comm_ms, p.overlap_ms, p.exposed_comm_ms)),
        )
        for p in phases
    ]


@pytest.mark.parametrize("trace", [three_micro_steps_cpu, three_micro_steps_gpu, three_micro_steps_gpu_lean])
def test_each_micro_step_counts_as_what_it_ran(tmp_path, trace):
    """forward 30, backward 60, optimizer 10: the step's 100, in three micro-steps. Computation: the forward ops
    (kernels), the backward ops less the all-reduce's launch (CPU: 60 - 2), the optimizer's; the all-reduce (6 us on
    CPU, 8 on the GPU) is all under the last backward."""
    report = analyze(load_run([trace().write(tmp_path / "rank0.pt.trace.json")], workers=1), "accum", "analysis")
    gpu = trace is not three_micro_steps_cpu
    comm = 8 if gpu else 6
    assert shares(report.phases) == [
        ("forward", 30, 30, 0, 0, 0),
        ("backward", 60, 60 if gpu else 58, comm, comm, 0),
        ("optimizer", 10, 10, 0, 0, 0),
    ]
    (step,) = report.steps
    assert step.window_ms * 1000 == pytest.approx(100) and step.phases == report.phases
    assert step.micro_steps == 3 and report.micro_steps == 3
    (call,) = report.collectives
    assert call.phase == "backward"


@pytest.mark.parametrize("trace", [three_micro_steps_cpu, three_micro_steps_gpu])
def test_buckets_and_the_bucket_model_take_the_last_micro_steps_backward(tmp_path, trace):
    """The all-reduce is ready 10 us into the last backward (CPU: launched at 80, the pass began at 70; GPU: the
    kernels launched before it done at 1090, but it started at 1080, 10 us after the last pass's first kernel),
    not 70 us into the first one; the step profile's forward before the backward is everything before it (70 us)."""
    run = load_run([trace().write(tmp_path / "rank0.pt.trace.json")], workers=1)
    ((bucket,),) = bucket_timelines(run.ranks[0])
    assert bucket.ready_ms == pytest.approx(0.01)
    assert backward_times(run.ranks[0]).compute_ms == pytest.approx(0.01)
    profile = step_profile(run)
    assert (profile.before_backward_ms, profile.backward_ms) == pytest.approx((0.07, 0.01))
    assert profile.bucket_ready == pytest.approx([1.0])


def test_a_collective_in_a_later_micro_steps_forward_is_the_forwards(tmp_path):
    """FSDP gathers parameters in every micro-step's forward: one launched at 33, in the second forward, is a
    forward collective (it came after the first backward op), and its 2 us count in the forward, hidden under the
    forward op [30,40]."""
    b = three_micro_steps_cpu().x("c10d::_allgather_base_", 33, 1)
    b.x("gloo:all_gather", 34, 2, cat="user_annotation", thread=GLOO, Input_Dims=[[1000]], Input_type=["float"])
    (rank,) = load_run([b.write(tmp_path / "rank0.pt.trace.json")], workers=1).ranks
    assert [(c.op, c.phase) for c in rank.collectives] == [("all_gather", "forward"), ("all_reduce", "backward")]
    report = analyze(load_run([tmp_path / "rank0.pt.trace.json"], workers=1), "accum", "analysis")
    assert shares(report.phases)[0] == ("forward", 30, 29, 2, 2, 0)  # the launch [33,34] is not computation


def test_backward_ops_with_nothing_else_between_them_are_one_pass(tmp_path):
    """One micro-step: backward ops [30,40] and [41,50] with nothing of the forward between them (the engine's own
    gap), an op nested in the second: one pass, forward 30, backward 50, and no Optimizer.step: an optimizer of 0."""
    b = TraceBuilder().step(1, 0, 80).x("aten::linear", 5, 20).x(BACKWARD, 30, 10).x(BACKWARD, 41, 9)
    b.x("aten::mm", 42, 5)
    report = analyze(load_run([b.write(tmp_path / "rank0.pt.trace.json")], workers=1), "one", "analysis")
    assert [(p.phase, round(p.window_ms * 1000, 9)) for p in report.phases] == [
        ("forward", 30),
        ("backward", 50),
        ("optimizer", 0),
    ]
    assert report.micro_steps == 1


def test_old_reports_load_without_micro_steps(tmp_path):
    import json

    from commprof.results.store import save_result

    report = analyze(
        load_run([three_micro_steps_cpu().write(tmp_path / "rank0.pt.trace.json")], workers=1), "old", "analysis"
    )
    folder = tmp_path / "old"
    folder.mkdir()
    save_result(report, folder)
    data = json.loads((folder / "report.json").read_text())
    del data["micro_steps"]
    for step in data["steps"]:
        del step["micro_steps"]
    (folder / "report.json").write_text(json.dumps(data))
    loaded = load_report(folder)
    assert loaded.micro_steps is None and loaded.steps[0].micro_steps is None


@pytest.mark.slow
def test_a_script_with_gradient_accumulation(tmp_path):
    """A training script of the usual kind (argparse, its own process group and DDP, no_sync for all but the last
    of --accum micro-batches): four micro-steps make each profiled step, and the forward has its time."""
    result = commprof_here(
        "run",
        "--run-id",
        "acc",
        "--max-steps",
        "12",
        "--schedule",
        "3,1,6",
        "--quiet",
        "--",
        str(REPO / "tests" / "data" / "scripts" / "train_accumulate.py"),
        "--accum",
        "4",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    report = load_report(tmp_path / "reports" / "acc")
    assert report.micro_steps == 4 and {s.micro_steps for s in report.steps} == {4}
    assert [p.phase for p in report.phases] == ["forward", "backward", "optimizer"]
    assert all(p.window_ms > 0 for p in report.phases)
    for step in report.steps:
        assert sum(p.window_ms for p in step.phases) == pytest.approx(step.window_ms)
    # each bucket all-reduced once per optimizer step, in the last backward (none under no_sync)
    assert {(c.op, c.phase, c.calls_per_step) for c in report.collectives} == {("all_reduce", "backward", 1.0)}
    assert "4 micro-steps" in (tmp_path / "reports" / "acc" / "report.md").read_text()
