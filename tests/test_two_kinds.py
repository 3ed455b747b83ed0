"""A job of two kinds (issue 69), replayed from a real run recorded by commprof (tests/data/two-kinds/): an FSDP2
encoder and a DDP head built inline (`head = DDP(nn.Sequential(...), bucket_cap_mb=1)`) in one script. The job is
described once, as two instances of two kinds; each kind's detectors read its own instance's collectives alone."""

import pytest

from commprof.analysis.analyze import analyze_run
from commprof.analysis.evidence import Evidence
from commprof.analysis.fsdp_findings import fsdp_options
from commprof.commands.reporting import report_from_traces
from commprof.commands.script_kind import check_kind, several_kinds
from commprof.kinds import DDP, DEEPSPEED, FSDP, HOROVOD
from commprof.kinds.ddp_buckets import bucket_bytes
from commprof.launch.runlog import read_run_json
from commprof.render.job_text import kinds_text
from commprof.results.job import BuiltDDP, BuiltFSDP
from commprof.settings import DDPOptions, FSDPOptions
from commprof.trace.load import load_run
from tests.conftest import REPO

RUN = REPO / "tests" / "data" / "two-kinds"
HEAD_BUCKETS = (1071144, 526336)  # bucket_cap_mb=1 over the head's parameters: DDP's layout, known from its sizes
ENCODER_REDUCTION = 263168  # one block's gradient, which Gloo reduce-scatters as an all-reduce of it whole


@pytest.fixture(scope="module")
def analysed():
    report, _ = report_from_traces([RUN], "two", "analysis", workers=1)
    analysis = analyze_run(load_run([RUN], workers=1), "two", "analysis", run=report.run)
    return report, Evidence(report, analysis.windows)


def test_the_job_is_two_instances_of_two_kinds_each_named_by_the_script(analysed):
    report, _ = analysed
    job = report.run.job
    assert job.kinds == ("ddp", "fsdp") and job.kind == "ddp"
    assert [(b.kind, b.label, b.module) for b in job.built] == [
        ("ddp", "head", "Sequential"),  # named by what the call is assigned to, not its class
        ("fsdp", "encoder", "Sequential"),
    ]
    assert job.first(BuiltDDP).asked["bucket_cap_mb"] == 1 and len(job.first(BuiltFSDP).units) == 5
    assert bucket_bytes(job.first(BuiltDDP)) == HEAD_BUCKETS
    assert [(m.name, m.kind, m.calls_per_step) for m in report.models] == [
        ("head", "DDP", 2.0),
        ("encoder", "FSDP", 12.0),
    ]


def test_each_kind_reads_its_own_instances_collectives(analysed):
    report, evidence = analysed
    every = {c.nbytes for rank, _ in evidence.windows for c in rank.collectives if c.op == "all_reduce"}
    assert every == {*HEAD_BUCKETS, ENCODER_REDUCTION}  # the encoder's all-reduces are in the trace...
    ddp = evidence.samples_of(DDP)
    assert ddp and all(tuple(s.bucket_bytes) == HEAD_BUCKETS for s in ddp)  # ...not among the head's buckets
    assert evidence.samples_of(DEEPSPEED) == [] and evidence.samples_of(HOROVOD) == []  # kinds the job holds not
    assert fsdp_options(report.run) is not None  # FSDP's detector weighs the encoder


def test_each_kinds_findings_are_on_its_own_model_and_every_kinds_checks_are_named(analysed):
    report, _ = analysed
    weighed = report.findings + report.within_noise
    assert {f.kind for f in weighed} >= {"bucket_cap", "fsdp_reshard"}  # each kind's detector ran on this job
    (cap,) = [f for f in weighed if f.kind == "bucket_cap"]
    assert cap.model == "head" and cap.setting["ddp_model"] == "head" and cap.facts.options.ddp_model == "head"
    kinds = report.checked
    assert "bucket_cap" in kinds and "fsdp_reshard" in kinds  # both kinds' checks, the ranks' too
    assert "zero_buckets" not in kinds and "horovod_fusion" not in kinds and "straggler" in kinds
    assert [FSDP.built(report.run), DDP.built(report.run)] == [report.run.job.built[1], report.run.job.built[0]]


def test_a_sweep_of_one_kind_says_what_it_varies_on_which_model_and_keeps_the_others():
    """Each kind's settings said of this job, its head (DDP) and encoder (FSDP) in the order built (their words:
    test_render_model_words.py)."""
    run = read_run_json(RUN)
    assert [(b.label, b.kind) for b in run.job.built] == [("head", "ddp"), ("encoder", "fsdp")]
    assert several_kinds(run, DDPOptions()) == kinds_text(run.job, DDP)
    assert several_kinds(run, FSDPOptions()) == kinds_text(run.job, FSDP)
    check_kind(run, FSDPOptions())  # either kind's settings act on this job: neither is refused
    check_kind(run, DDPOptions())
