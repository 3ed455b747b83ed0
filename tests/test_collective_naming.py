"""Collectives named and sized by what the program asked for, and communication kernels that are not NCCL's.

Hand-built GPU traces, each with one CPU step [0, 1000] on a world of 4; every kernel time is checked by eye."""

import pytest

from commprof.analysis.analyze import analyze
from commprof.trace.load import load_run
from tests.tracebuilder import TraceBuilder

SENDRECV = "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclWorkElem)"
ALLREDUCE = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)"
MULTIMEM = "void c10d::symmetric_memory::multimem_all_reduce_kernel<c10::BFloat16, 16, 8>(c10::BFloat16*, long)"


def analysed(builder: TraceBuilder, tmp_path):
    report = analyze(load_run([builder.write(tmp_path / "rank0.json")], workers=1), "t", "analysis")
    return report, report.ranks[0]


def older_kineto() -> TraceBuilder:
    """Older Kineto: a kernel's External id equals its correlation and matches no CPU op of that collective (here
    it even equals the External id of an unrelated broadcast op). The launches sit inside the collective ranges:

    - SendRecv kernel [100, 200] launched at 20 inside c10d::alltoall_base_ [10, 40] > record_param_comms
      [12, 38] (scalars only) > nccl:all_to_all [15, 35] (1024 x 256 floats);
    - AllReduce kernel [300, 350] launched at 60 inside c10d::allreduce_ [50, 70] (a tensor list) >
      nccl:all_reduce [55, 65] (1000 floats)."""
    b = TraceBuilder(rank=0, world_size=4, backend="nccl").step(1, 0, 1000)
    b.x("c10d::broadcast_", 5, 2, External_id=21, Input_Dims=[[7]], Input_type=["long"])
    b.x(
        "c10d::alltoall_base_",
        10,
        30,
        External_id=101,
        Input_Dims=[[262144], [262144], [], []],
        Input_type=["float", "float", "", ""],
    )
    b.x("record_param_comms", 12, 26, External_id=102, Input_Dims=[[], []], Input_type=["Scalar", "Scalar"])
    b.x(
        "nccl:all_to_all",
        15,
        20,
        cat="user_annotation",
        External_id=103,
        Input_Dims=[[1024, 256]],
        Input_type=["float"],
    )
    b.launch(20, 21, external_id=21).kernel(SENDRECV, 100, 100, 21, External_id=21)
    b.x("c10d::allreduce_", 50, 20, External_id=104, Input_Dims=[[], [], []], Input_type=["TensorList", "", "Scalar"])
    b.x("nccl:all_reduce", 55, 10, cat="user_annotation", External_id=105, Input_Dims=[[1000]], Input_type=["float"])
    b.launch(60, 22, external_id=22).kernel(ALLREDUCE, 300, 50, 22, External_id=22)
    return b


def test_collectives_are_named_and_sized_from_the_ranges_around_their_launch(tmp_path):
    report, _ = analysed(older_kineto(), tmp_path)
    by_op = {c.op: c for c in report.collectives}
    assert set(by_op) == {"all_to_all", "all_reduce"}  # the SendRecv kernel ran an all_to_all
    a2a, ar = by_op["all_to_all"], by_op["all_reduce"]
    assert (a2a.bytes, a2a.dtype, a2a.group_size) == (1024 * 256 * 4, "float", 4)
    assert a2a.algbw_gbps == pytest.approx(1024 * 256 * 4 / 100e-6 / 1e9)  # 100 us
    assert a2a.busbw_gbps == pytest.approx(a2a.algbw_gbps * 3 / 4)  # nccl-tests: (n - 1) / n
    assert (ar.bytes, ar.dtype) == (4000, "float")
    assert ar.busbw_gbps == pytest.approx(4000 / 50e-6 / 1e9 * 2 * 3 / 4)  # 2 (n - 1) / n


def test_the_kernels_own_args_outrank_the_ranges(tmp_path):
    b = older_kineto()
    sendrecv = next(e for e in b.events if e["name"] == SENDRECV)
    sendrecv["args"].update(
        {"Collective name": "all_gather", "In msg nelems": 10, "Out msg nelems": 40, "dtype": "Float", "Group size": 4}
    )
    report, _ = analysed(b, tmp_path)
    gather = next(c for c in report.collectives if c.op == "all_gather")
    assert (gather.bytes, gather.group_size) == (160, 4)


def test_a_send_recv_kernel_outside_any_collective_range_stays_send_recv(tmp_path):
    b = TraceBuilder(rank=0, world_size=4, backend="nccl").step(1, 0, 1000)
    b.launch(20, 1).kernel(SENDRECV, 100, 100, 1)
    report, _ = analysed(b, tmp_path)
    assert [(c.op, c.bytes) for c in report.collectives] == [("send_recv", None)]


def symmetric_memory() -> TraceBuilder:
    """vLLM's all-reduce through torch symmetric memory: a GEMM [0, 400] launched at 10, then under
    vllm::all_reduce [100, 150] > symm_mem::multimem_all_reduce_ [110, 140] (2,621,440 bf16: 5 MB) the
    multimem kernel [400, 600] launched at 120, on the compute stream; then another GEMM [600, 800]."""
    b = TraceBuilder(rank=0, world_size=8, backend="nccl").step(1, 0, 1000)
    b.launch(10, 1).kernel("sm90_xmma_gemm_bf16bf16_bf16f32", 0, 400, 1)
    b.x("vllm::all_reduce", 100, 50, Input_Dims=[[2621440]], Input_type=["c10::BFloat16"])
    b.x("symm_mem::multimem_all_reduce_", 110, 30, Input_Dims=[[2621440], [], []], Input_type=["c10::BFloat16", "", ""])
    b.launch(120, 2).kernel(MULTIMEM, 400, 200, 2)
    b.launch(160, 3).kernel("sm90_xmma_gemm_bf16bf16_bf16f32", 600, 200, 3)
    return b


def test_symmetric_memory_all_reduce_is_communication(tmp_path):
    report, rank = analysed(symmetric_memory(), tmp_path)
    assert (rank.compute_ms, rank.comm_ms, rank.exposed_comm_ms) == pytest.approx((0.6, 0.2, 0.2))
    (collective,) = report.collectives
    assert (collective.op, collective.backend, collective.bytes, collective.group_size) == (
        "all_reduce",
        "symm_mem",
        5242880,
        8,
    )


def test_a_custom_all_reduce_kernel_is_known_by_the_op_that_launched_it(tmp_path):
    b = symmetric_memory()
    for event in b.events:
        if event["name"] == MULTIMEM:
            event["name"] = "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(...)"
        if event["name"] == "symm_mem::multimem_all_reduce_":
            event["name"] = "_C_custom_ar::all_reduce"
    report, rank = analysed(b, tmp_path)
    assert (rank.compute_ms, rank.comm_ms) == pytest.approx((0.6, 0.2))
    (collective,) = report.collectives
    assert (collective.op, collective.backend, collective.bytes) == ("all_reduce", "custom", 5242880)


def test_kernels_of_a_fused_collective_matmul_stay_computation(tmp_path):
    b = symmetric_memory()
    for event in b.events:
        if event["name"] == MULTIMEM:
            event["name"] = "sm90_xmma_gemm_bf16bf16_bf16f32_ag"
        if event["name"] in ("symm_mem::multimem_all_reduce_", "vllm::all_reduce"):
            event["name"] = "symm_mem::fused_all_gather_matmul"
    report, rank = analysed(b, tmp_path)
    assert (rank.compute_ms, rank.comm_ms, report.collectives) == (pytest.approx(0.8), 0.0, [])


@pytest.mark.parametrize("builder", [older_kineto, symmetric_memory])
def test_a_streamed_trace_keeps_what_naming_needs(tmp_path, builder):
    from commprof.trace.classify import classify
    from commprof.trace.parse import parse_trace
    from commprof.trace.stream import stream_trace

    path = builder().write(tmp_path / "rank0.json")
    whole, streamed = classify(path, parse_trace(path)), classify(path, stream_trace(path))
    assert streamed.collectives == whole.collectives and streamed.compute == whole.compute


def test_a_scalar_collective_has_one_element():
    """DeepSpeed all-reduces a 0-dim tensor (a norm, an overflow flag) each step: its record's Input Dims are [[]]
    with a dtype, one element of it, not an unknown size; a TensorList's or an untyped argument's stay unknown."""
    from commprof.trace.meta import meta_from_args

    scalar = meta_from_args({"Input Dims": [[]], "Input type": ["float"]})
    assert (scalar.nelems, scalar.dtype) == (1, "float")
    assert meta_from_args({"Input Dims": [[]], "Input type": ["Scalar"]}).nelems is None
    assert meta_from_args({"Input Dims": [[265738]], "Input type": ["float"]}).nelems == 265738
