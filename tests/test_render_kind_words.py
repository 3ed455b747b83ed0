"""scale, compare and bench speak each kind of job's own words (issue 63): an FSDP job's header names its model as
built and FSDP's options, never bucket_cap_mb, and its bandwidth columns name the all-gathers and reduce-scatters it
ran; a DDP job's keeps DDP's words. Before, `scale -- train_fsdp.py` wrote "its model mlp (0 parameters), ...,
bucket_cap_mb=DDP's default" and an "all-reduce busbw" column. Results built by hand; no process is launched."""

import dataclasses

import pytest

from commprof.analysis.ran_as import busbw_by_size, job_as_run, kind_ran, largest_by_collective
from commprof.commands.bench import ddp_buckets_marked
from commprof.config import RunConfig
from commprof.render import compare as compare_view
from commprof.render import scale as scale_view
from commprof.render.bench import ROWS_TITLE
from commprof.render.bench import rows as bench_rows
from commprof.render.outputs import markdown
from commprof.results.bench import BenchRow
from commprof.results.common import Estimate
from commprof.results.compare import BackendRun, CompareResult
from commprof.results.job import BuiltDDP, CollectiveBusbw, Job
from commprof.results.report import CollectiveStats
from commprof.results.run_record import RunRecord
from commprof.results.scale import ScalePoint, ScaleReport

FSDP_SETTINGS = {"reshard_after_forward": None, "forward_prefetch": 0, "backward_prefetch": 1, "reduce_dtype": "fp32"}
# FSDP2 on Gloo, as train_fsdp.py's two ranks ran it: Gloo runs the reduce-scatter as an all-reduce of the whole buffer
FSDP_BUSBW = [
    CollectiveBusbw("all_gather", "all_gather", 131584, 0.04),
    CollectiveBusbw("reduce_scatter", "all_reduce", 263168, 0.17),
]
DDP_BUSBW = [CollectiveBusbw("all_reduce", "all_reduce", 29_464_616, 0.55)]


def point(world_size, busbw=(), allreduce=None, **fields):
    return ScalePoint(
        world_size=world_size,
        global_batch=world_size,
        per_rank_batch=1,
        learning_rate=0.1,
        step_ms=Estimate(50.0, 45.0, 55.0),
        samples_per_s=20.0 * world_size,
        speedup=float(world_size),
        efficiency=1.0,
        compute_ms=30.0,
        exposed_comm_ms=10.0,
        idle_ms=5.0,
        allreduce_busbw_gbps=allreduce,
        busbw=list(busbw),
        **fields,
    )


def scale_report(**fields):
    base = dict(
        name="sc",
        mode="weak",
        model="Sequential",
        parameters=265_738,
        device="cpu",
        backend="gloo",
        bucket_cap_mb=None,
        base_learning_rate=0.1,
        script=["train_fsdp.py"],
        strategy="fsdp",
        settings=FSDP_SETTINGS,
        points=[point(1), point(2, FSDP_BUSBW)],
        order=[1, 2],
    )
    return ScaleReport(**(base | fields))


def test_an_fsdp_scale_names_its_model_fsdps_options_and_its_all_gathers_and_reduce_scatters():
    report = scale_report()
    headers = scale_view.measured_headers(report)
    assert headers[-2:] == ("all-gather busbw GB/s", "reduce-scatter busbw GB/s")
    assert "all-reduce busbw GB/s" not in headers and "model ms" not in headers  # no all-reduce, no DDP model
    assert [row[len(scale_view.MEASURED_HEADERS) :] for row in scale_view.measured_rows(report)] == [
        ("-", "-"),
        ("0.04", "0.17"),
    ]
    notes = scale_view.model_notes(report)
    assert notes[0].startswith(
        "weak scaling of train_fsdp.py, its model Sequential (265,738 parameters), under FSDP (fully_shard): "
        "reshard_after_forward=FSDP's default (True), forward_prefetch=0, backward_prefetch=1, reduce_dtype=fp32; "
        "gloo on cpu;"
    )
    assert "gloo runs the job's reduce-scatter as an all-reduce of the whole buffer" in " ".join(notes)
    assert "FSDP's collectives are not modelled" in " ".join(notes)
    text = markdown(report)
    assert "bucket_cap_mb" not in text and "0 parameters" not in text and "all-reduce busbw" not in text


def test_a_script_whose_model_and_options_were_not_recorded_says_so():
    report = scale_report(model=None, parameters=None, settings=None)
    first = scale_view.model_notes(report)[0]
    assert first.startswith(
        "weak scaling of train_fsdp.py, its model not recorded (parameter count not known), under FSDP (fully_shard), "
        "its reshard_after_forward, prefetch and reduce dtype as the script passes them (not recorded); gloo on cpu;"
    )
    assert "0 parameters" not in markdown(report) and "None" not in first


def test_a_ddp_scale_keeps_ddps_words_and_its_model_column():
    report = scale_report(
        model="Net",
        parameters=792_074,
        strategy="ddp",
        settings={"bucket_cap_mb": None, "comm_hook": "fp16", "grad_accum": 1},
        script=["train_default_ddp.py"],
        points=[point(1, predicted_step_ms=40.0), point(2, DDP_BUSBW, allreduce=0.55, predicted_step_ms=48.0)],
    )
    headers = scale_view.measured_headers(report)
    assert headers[-2:] == ("all-reduce busbw GB/s", "model ms")
    assert [row[-2:] for row in scale_view.measured_rows(report)] == [("-", "40.0"), ("0.55", "48.0")]
    assert scale_view.model_notes(report)[0].startswith(
        "weak scaling of train_default_ddp.py, its model Net (792,074 parameters), under DistributedDataParallel, "
        "bucket_cap_mb=DDP's default, comm_hook=fp16; gloo on cpu;"
    )
    built_in = scale_report(script=None, model="mlp-small", strategy="ddp", bucket_cap_mb=25.0, settings=None)
    said = scale_view.trained(built_in)
    assert said == "mlp-small (265,738 parameters) under DistributedDataParallel, bucket_cap_mb=25"


def test_a_scripts_batch_argument_is_said_divided_among_the_ranks_under_strong_scaling():
    """test_scale_script.py: a script's strong scaling, its --batch-size divided among the ranks."""
    strong = scale_report(script=["train_default_ddp.py"], mode="strong", batch_argument="--batch-size")
    notes = scale_view.model_notes(strong)
    assert "Batch per rank: the script's --batch-size, divided among the ranks at each size (strong scaling)." in notes
    weak = scale_view.model_notes(dataclasses.replace(strong, mode="weak"))
    assert "Batch per rank: the script's --batch-size." in weak


def test_a_scale_report_from_before_keeps_its_all_reduce_column():
    report = scale_report(strategy="ddp", settings=None, points=[point(1), point(2, allreduce=0.5)])
    assert scale_view.measured_headers(report)[-1] == "all-reduce busbw GB/s"
    assert scale_view.measured_rows(report)[1][-1] == "0.50"


def stats(op, nbytes, busbw, purpose=None, count=10):
    return CollectiveStats(op, "gloo", "float", nbytes, 2, count, 1.0, 1.0, busbw, busbw, purpose=purpose)


FSDP_ON_GLOO = [
    stats("all_gather", 5140, 0.001, "parameter all-gather", count=6),
    stats("all_gather", 131584, 0.02, "parameter all-gather", count=30),  # forward
    stats("all_gather", 131584, 0.08, "parameter all-gather", count=10),  # backward: the same size, once
    stats("all_reduce", 263168, 0.17, "gradient reduce-scatter", count=24),
]


def test_collectives_are_read_by_what_the_job_ran_them_as():
    largest = largest_by_collective(FSDP_ON_GLOO)
    assert [(b.collective, b.op, b.bytes) for b in largest] == [
        ("all_gather", "all_gather", 131584),
        ("reduce_scatter", "all_reduce", 263168),
    ]
    assert largest[0].busbw_gbps == pytest.approx((0.02 * 30 + 0.08 * 10) / 40)  # weighed by the calls
    assert [b.bytes for b in busbw_by_size(FSDP_ON_GLOO)] == [5140, 131584, 263168]
    ddp = [stats("all_reduce", 4 << 20, 0.35), stats("all_reduce", 29_464_616, 0.55)]
    assert [(b.collective, b.bytes) for b in largest_by_collective(ddp)] == [("all_reduce", 29_464_616)]
    zero_flag = [stats("all_reduce", 4, 0.0001, "norm or overflow flag"), stats("all_gather", 1024, 0.1)]
    assert [b.collective for b in busbw_by_size(zero_flag)] == ["all_gather"]  # a norm is no transfer


def test_the_kind_is_what_the_run_built_else_fsdps_ranges():
    script = RunConfig(run_id="t", script=("train.py",))
    bare = RunRecord(run_id="t", config=script)
    assert kind_ran(script, bare, FSDP_ON_GLOO) == "fsdp"  # fully_shard left no record: its ranges say FSDP
    assert kind_ran(script, bare, []) is None  # a single rank's FSDP runs no collective: not known
    ddp = RunRecord(
        run_id="t",
        config=script,
        model="Net",
        parameters=12,
        job=Job([BuiltDDP("Net", parameters=12, asked={"bucket_cap_mb": 5})]),
    )
    assert kind_ran(script, ddp, FSDP_ON_GLOO) == "ddp"
    job = job_as_run(script, ddp, "ddp")
    assert (job.strategy, job.model, job.parameters) == ("ddp", "Net", 12) and job.settings["bucket_cap_mb"] == 5
    gan = dataclasses.replace(
        ddp,
        job=Job(
            [
                BuiltDDP("Sequential", name="generator", parameters=10),
                BuiltDDP("Sequential", name="critic", parameters=2),
            ]
        ),
    )
    two = job_as_run(script, gan, "ddp")  # a script's two models: each named, all counted
    assert (two.model, two.parameters) == ("generator (Sequential) and critic (Sequential)", 12)
    unknown = job_as_run(script, bare, "fsdp")
    assert (unknown.model, unknown.parameters, unknown.settings) == (None, None, None)  # never "0 parameters"
    built_in = RunConfig(run_id="t", strategy="fsdp")
    fsdp = job_as_run(built_in, RunRecord(run_id="t", config=built_in, model="mlp-small", parameters=9), "fsdp")
    assert fsdp.model == "mlp-small" and fsdp.settings is not None and "bucket_cap_mb" not in fsdp.settings
    assert fsdp.settings["reshard_after_forward"] is True and fsdp.settings["reduce_dtype"] == "fp32"


def compare_row(name, strategy, busbw, **fields):
    return BackendRun(
        "gloo",
        True,
        step_ms=10.0,
        comm_ms=3.0,
        exposed_comm_ms=1.0,
        overlap_ms=2.0,
        strategy=strategy,
        label=name,
        busbw=busbw,
        model="mlp-small",
        parameters=8_407_050,
        **fields,
    )


def test_compare_names_each_strategys_collectives_and_settings():
    result = CompareResult(
        run_id="c",
        summary="ddp wins",
        compared="strategy",
        rows=[
            compare_row("ddp", "ddp", DDP_BUSBW, settings={"bucket_cap_mb": 25.0, "comm_hook": "none"}),
            compare_row("fsdp", "fsdp", FSDP_BUSBW, settings=FSDP_SETTINGS | {"reshard_after_forward": True}),
        ],
    )
    assert compare_view.headers(result)[-1] == "busbw GB/s by collective and size"
    cells = [row[-1] for row in compare_view.rows(result)]
    assert cells == ["all-reduce 28.1 MiB: 0.55", "all-gather 128.5 KiB: 0.04; reduce-scatter 257.0 KiB: 0.17"]
    lines = compare_view.job_lines(result)
    assert lines[0] == "ddp: mlp-small (8,407,050 parameters) under DistributedDataParallel, bucket_cap_mb=25."
    assert lines[1].startswith("fsdp: mlp-small (8,407,050 parameters) under FSDP (fully_shard): reshard_after_")
    assert "bucket_cap_mb" not in lines[1]
    assert lines[2] == (
        "fsdp: gloo runs the job's reduce-scatter as an all-reduce of the whole buffer: its busbw counts an "
        "all-reduce's traffic."
    )


def test_a_comparison_of_all_reduces_alone_keeps_its_all_reduce_column():
    old = BackendRun("gloo", True, step_ms=10.0, comm_ms=3.0, exposed_comm_ms=1.0, overlap_ms=2.0)
    result = CompareResult(
        run_id="c",
        summary="-",
        rows=[dataclasses.replace(old, busbw_by_size={"4194304": 0.35}), compare_row("mpi", "ddp", DDP_BUSBW)],
    )
    assert compare_view.headers(result)[-1] == "all-reduce busbw GB/s by size"
    assert [row[-1] for row in compare_view.rows(result)] == ["4.0 MiB: 0.35", "28.1 MiB: 0.55"]
    assert compare_view.job_lines(result)[0].startswith("mpi: mlp-small (8,407,050 parameters) under Distributed")


def test_bench_marks_ddps_bucket_sizes_on_all_reduces_alone():
    rows = [
        BenchRow("gloo", op, 4 << 20, "float32", 10.0, 9.0, 12.0, 0.1, 0.1, True, ddp_bucket=True)
        for op in ("all_reduce", "all_gather", "broadcast")
    ]
    marked = ddp_buckets_marked(rows)
    assert [r.ddp_bucket for r in marked] == [True, False, False]
    assert [cells[2] for cells in bench_rows(dataclasses.replace(_bench(), rows=marked))] == [
        "4.00 MiB *",
        "4.00 MiB",
        "4.00 MiB",
    ]
    assert "all-reduce" in ROWS_TITLE


def _bench():
    from commprof.results.bench import BenchResult

    return BenchResult(name="b", world_size=2, rows=[], fits=[])


def test_a_horovod_job_is_named_by_its_fusion_buffer_and_cycle_and_tuned_by_its_fusion_buffer():
    """test_horovod.py: a Horovod script run with --fusion-threshold-mb 0, its cycle Horovod's own 1 ms; a tune of
    DDP's settings, which do nothing to it, that tunes its fusion buffer instead."""
    import json

    from commprof.render import progress_words
    from commprof.results.job import BuiltHorovod
    from commprof.results.report import Report
    from commprof.results.store import _build
    from tests.conftest import run_summary
    from tests.golden_reports import GOLDEN

    golden = json.loads((GOLDEN / "nccl-a100-rank0-of-2.json").read_text())
    built = BuiltHorovod("SGD", fusion_threshold_bytes=0, applied={"HOROVOD_FUSION_THRESHOLD": "0"})
    run = run_summary(script=["train_horovod.py"], job=Job([built]))
    report = dataclasses.replace(_build(Report, {**golden, "created": "", "sources": []}), run=run)
    assert "settings: script=train_horovod.py, horovod=fusion buffer 0 MiB (commprof's), cycle 1 ms" in markdown(report)
    refused = "the script trains with Horovod (hvd.DistributedOptimizer), not DistributedDataParallel"
    assert progress_words.tune_instead(refused, "Horovod's fusion_threshold_mb", "horovod") == (
        "tune: the script trains with Horovod (hvd.DistributedOptimizer), not DistributedDataParallel: tuning "
        "Horovod's fusion_threshold_mb instead (as --strategy horovod)"
    )
