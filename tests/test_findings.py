"""Findings on hand-built traces whose every number is checked by eye (times in microseconds): each finding
fires where it must, with the gain worked out below, and a balanced run gets none."""

import dataclasses

import pytest

from commprof.analysis.analyze import analyze_run
from commprof.analysis.evidence import Evidence
from commprof.analysis.finding_kinds import checked
from commprof.analysis.findings import findings
from commprof.analysis.predict import MB, ComputeModel, LinkModel, StepProfile, rebucket, simulate_step
from commprof.results.finding_facts import LinkSource
from commprof.results.job import BuiltDDP, Job
from commprof.results.report import JobStep
from commprof.trace.load import load_run
from tests.conftest import REPO, run_summary
from tests.tracebuilder import GLOO, TraceBuilder

FLOATS_25_MIB = 25 * MB // 4
DDP_RUN = run_summary(parameter_sizes=[5 * MB] * 5)


def ddp_rank(rank, steps=2, late_us=0.0, first_op_us=0.0, allreduce_us=10_000.0, optimizer_us=5_000.0, last_us=None):
    """Each 50 ms step: forward [0, 10] ms, backward [10, 30], the one 25 MiB bucket launched at 30 and
    all-reduced for 10 ms (nothing left to hide it), the optimizer [40, 45], idle to 50. `late_us` shifts this
    rank's backward end and all-reduce later, and the all-reduce ends `allreduce_us` after the last rank's arrival
    (`last_us` late: by default this one's); `first_op_us` leaves the step's start idle (waiting for data)."""
    last_us = late_us if last_us is None else last_us
    trace = TraceBuilder(rank=rank)
    trace.header["host_name"] = "node0"  # one host: one clock, so lateness is not aligned away
    for k in range(steps):
        t = k * 50_000
        trace.step(k + 1, t, 50_000)
        trace.x("aten::mm", t + first_op_us, 10_000 - first_op_us)
        trace.x("autograd::engine::evaluate_function: MmBackward0", t + 10_000, 20_000 + late_us)
        trace.x("c10d::allreduce_", t + 30_000 + late_us, 10)
        trace.x(
            "gloo:all_reduce",
            t + 30_000 + late_us,
            allreduce_us + last_us - late_us,
            cat="user_annotation",
            thread=GLOO,
            Input_Dims=[[FLOATS_25_MIB]],
            Input_type=["float"],
        )
        trace.x("aten::add_", t + 40_000 + last_us, optimizer_us)
    return trace


def nccl_rank(rank, steps=2):
    """The same step on a GPU: the CPU launches forward, backward, the all-reduce and the optimizer in its first
    ms; the device runs them as ddp_rank's ranges (forward [0, 10] ms, backward [10, 30], all-reduce [30, 40],
    optimizer [40, 45]), the all-reduce ready when the backward's kernel ends."""
    trace = TraceBuilder(rank=rank, backend="nccl")
    for k in range(steps):
        t, c = k * 50_000, 10 * k
        trace.step(k + 1, t, 1_000)
        trace.x("aten::mm", t + 10, 5).launch(t + 11, correlation=c + 1)
        trace.x("autograd::engine::evaluate_function: MmBackward0", t + 20, 5).launch(t + 21, correlation=c + 2)
        trace.x(
            "record_param_comms",
            t + 30,
            5,
            External_id=c + 9,
            Collective_name="allreduce",
            In_msg_nelems=FLOATS_25_MIB,
            Out_msg_nelems=FLOATS_25_MIB,
            dtype="Float",
            Group_size=2,
        )
        trace.launch(t + 31, correlation=c + 3, external_id=c + 9)
        trace.x("aten::add_", t + 40, 5).launch(t + 41, correlation=c + 4)
        trace.kernel("volta_sgemm_128x64_nn", t, 10_000, correlation=c + 1)
        trace.kernel("volta_sgemm_128x64_nt", t + 10_000, 20_000, correlation=c + 2)
        trace.kernel(
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage)",
            t + 30_000,
            10_000,
            correlation=c + 3,
            stream=9,
        )
        trace.kernel("vectorized_elementwise_kernel", t + 40_000, 5_000, correlation=c + 4)
    return trace


def found(tmp_path, *ranks, run=None, job=None, drift_ms=0.0):
    paths = [r.write(tmp_path / f"rank{i}.json") for i, r in enumerate(ranks)]
    analysis = analyze_run(load_run(paths, workers=1), "t", "run", run)
    report = analysis.report
    claims, _ = findings(Evidence(report, analysis.windows, analysis.matching, job, drift_ms=drift_ms))
    return claims, report


def test_rebucketing_by_hand():
    """Backward 20 ms; today one 25 MiB bucket, ready when the backward ends, then 10 ms on a 2.62 GB/s link:
    10 ms exposed. With bucket_cap_mb=10 DDP makes buckets of 10, 10 and 5 MiB (five 5 MiB parameters, the
    last registered first), ready at 8, 16 and 20 ms; they all-reduce in 4, 4 and 2 ms: done at 12, 20, 22:
    2 ms exposed, 8 ms gained. A parameter larger than the cap shares the bucket it closes (pytorch#48880)."""
    link = LinkModel(0.0, 25 * MB / 10_000 / 1e3, LinkSource("given", given="by hand"))
    measured = StepProfile(2, 10.0, 20.0, 10.0, 10.0, [25 * MB], [1.0])
    flat = ComputeModel(measured.compute_ms, 0.0)
    assert rebucket(measured, [5 * MB] * 5, 10) == [(10 * MB, 0.4), (10 * MB, 0.8), (5 * MB, 1.0)]
    assert simulate_step(measured, flat, link, 2, rebucket(measured, None, None)) == pytest.approx((50.0, 10.0))
    assert simulate_step(measured, flat, link, 2, rebucket(measured, [5 * MB] * 5, 10)) == pytest.approx((42.0, 2.0))
    assert rebucket(measured, [20 * MB, 5 * MB], 10) == [(25 * MB, 1.0)]


def test_on_cpu_ranks_hiding_the_allreduce_is_no_gain(tmp_path):
    """Both ranks as in test_rebucketing_by_hand, over Gloo on CPU: communication takes the backward's cores
    whether it overlaps it or not, so the model counts every all-reduce in full. Every all-reduce here is 25 MiB:
    the fitted link has no latency, smaller buckets save nothing, and there is no finding (no fp16 compression
    either: the casts on the host cost more than the halved bytes save)."""
    result, _ = found(tmp_path, ddp_rank(0), ddp_rank(1), run=DDP_RUN)
    assert result == []


def test_an_exposed_nccl_allreduce_gets_a_bucket_cap_and_compression(tmp_path):
    """The same step on GPUs over NCCL, where an all-reduce under the backward is free. The best cap: 10 (8 ms;
    caps 1, 2 and 5 build one layout, five 5 MiB buckets, which gains the same: the largest cap whose gain is inside
    the best one's interval is named). fp16 compression all-reduces 12.5 MiB in 5 ms after the backward instead of
    25 MiB in 10: 5 ms gained, the casts measured free (a GPU casts 25 MiB in microseconds)."""
    from commprof.results.run_record import CastCost

    free_casts = dataclasses.replace(DDP_RUN, cast_costs=[CastCost("float16", 25 * MB, [0.0])])
    result, report = found(tmp_path, nccl_rank(0), nccl_rank(1), run=free_casts)
    assert [f.kind for f in result] == ["bucket_cap", "compression"]
    bucket, compression = result
    assert (bucket.gain_ms.value, bucket.gain_ms.low, bucket.gain_ms.high) == pytest.approx((8.0, 8.0, 8.0))
    step = sorted(r.step_time_ms.median for r in report.ranks)[0]  # the GPU step: its device work, first to last
    assert bucket.gain_pct == pytest.approx(100 * 8.0 / step) and bucket.setting == {"bucket_cap_mb": 10}
    facts = bucket.facts
    assert (facts.cap_mb, facts.buckets_then, facts.buckets_now) == (10, [10 * MB, 10 * MB, 5 * MB], [25 * MB])
    assert (facts.cap_now, facts.exposed_ms, facts.serial, facts.as_good) == (25, pytest.approx(10.0), False, [1])
    assert facts.link.bandwidth_gbps == pytest.approx(2.62, abs=0.005) and facts.options.bucket_cap_mb == 10
    assert compression.gain_ms.value == pytest.approx(5.0) and compression.setting == {"comm_hook": "fp16"}
    assert compression.facts.options.comm_hook == "fp16" and compression.facts.casts_measured


def two_bucket_rank(rank, steps=2, big_at=20_000):
    """A 25 MiB bucket ready halfway through the 20 ms backward, all-reduced in 10 ms under it; the last 1 MiB
    bucket at its end, all-reduced in 2 ms after it (exposed). The link fitted to them: 24 MiB more in 8 ms more,
    3.15 GB/s, and 1.67 ms of latency (two ring steps of 0.83 ms): 1 MiB runs at 0.52 GB/s."""
    trace = TraceBuilder(rank=rank)
    trace.header["host_name"] = "node0"
    for k in range(steps):
        t = k * 50_000
        trace.step(k + 1, t, 50_000)
        trace.x("aten::mm", t, 10_000)
        trace.x("autograd::engine::evaluate_function: MmBackward0", t + 10_000, 20_000)
        # launched when ready; Gloo runs them one after the other
        for launch, start, dur, floats in (
            (big_at, big_at, 10_000, FLOATS_25_MIB),
            (30_000, max(30_000, big_at + 10_000), 2_000, MB // 4),
        ):
            trace.x("c10d::allreduce_", t + launch, 10)
            trace.x(
                "gloo:all_reduce",
                t + start,
                dur,
                cat="user_annotation",
                thread=GLOO,
                Input_Dims=[[floats]],
                Input_type=["float"],
            )
        trace.x("aten::add_", t + 40_000, 5_000)
    return trace


def test_a_small_exposed_bucket_far_below_the_links_bandwidth(tmp_path):
    """On CPU ranks every all-reduce counts in full: 10 + 2 ms. One bucket of 26 MiB takes 1.67 + 8.67 = 10.33
    ms: bucket_cap_mb=50 saves one call's latency, 1.67 ms (3.3% of the 50 ms step), and the slow 1 MiB
    all-reduce (0.52 GB/s against the fitted 3.15) is its evidence, not a second piece of advice."""
    result, _ = found(tmp_path, two_bucket_rank(0), two_bucket_rank(1))
    assert [f.kind for f in result] == ["bucket_cap"]
    (bucket,) = result
    assert bucket.gain_ms.value == pytest.approx(5 / 3) and bucket.gain_ms.low == pytest.approx(5 / 3)
    assert (bucket.facts.cap_mb, bucket.facts.buckets_then, bucket.facts.serial) == (50, [26 * MB], True)
    slow = bucket.facts.slow
    assert [(b, round(gbps, 2)) for b, gbps in slow.sizes] == [(MB, 0.52)] and slow.top_gbps == pytest.approx(
        3.15, abs=0.005
    )


def test_slow_small_buckets_fold_into_the_bucket_advice(tmp_path):
    """Both buckets ready when the backward ends: 10 + 2 ms exposed. One bucket of 26 MiB takes 1.67 + 8.67 =
    10.33 ms: bucket_cap_mb=50 (of the measured buckets, the only merge) gains 1.67 ms, and the slow 1 MiB
    all-reduce is its evidence, not a second piece of advice about bucket sizes."""
    result, _ = found(tmp_path, two_bucket_rank(0, big_at=30_000), two_bucket_rank(1, big_at=30_000))
    assert [f.kind for f in result] == ["bucket_cap"]
    assert result[0].setting == {"bucket_cap_mb": 50} and result[0].gain_ms.value == pytest.approx(5 / 3)
    assert [b for b, _ in result[0].facts.slow.sizes] == [MB]


def test_a_hidden_allreduce_gets_nothing(tmp_path):
    """The same ranks with a 0.1 ms all-reduce: nothing exposed to gain (the gains are below 3% of the step)."""
    result, report = found(tmp_path, ddp_rank(0, allreduce_us=100), ddp_rank(1, allreduce_us=100), run=DDP_RUN)
    assert result == []
    # what was checked for a DDP run: DDP's settings and the ranks, not another kind's
    ranks = ["input_stall", "straggler", "stalls_now_and_then"]
    ddp = ["bucket_cap", "compression", "accumulation", "batch", "slow_collectives"]
    assert checked(report.run.job) == ddp + ranks and checked(None)[:4] == [
        "bucket_cap",
        "zero_buckets",
        "fsdp_reshard",
        "horovod_fusion",
    ]


def test_a_rank_that_computes_slower_in_every_step_is_the_straggler_on_any_host(tmp_path):
    """Rank 1's backward is 3 ms longer in each of 3 steps: rank 0 waits 3 ms for it at every all-reduce, 6% of its
    50 ms step. Both are CPU processes on one host: the evidence is that it is late in every step, not where its time
    went, so it is named (issue 39: a rank slowed inside its backward was once dismissed as core contention)."""
    from commprof.render.skew_text import skew_summary

    result, report = found(tmp_path, ddp_rank(0, steps=3, last_us=3_000), ddp_rank(1, steps=3, late_us=3_000))
    (straggler,) = [f for f in result if f.kind == "straggler"]
    facts = straggler.facts
    assert (facts.rank, facts.late_steps, facts.profiled_steps, facts.unprofiled_steps) == (1, 3, 3, 0)
    assert straggler.gain_ms.value == pytest.approx(3.0, abs=0.01) and straggler.gain_ms.low > 0
    summary = skew_summary(dataclasses.replace(report, findings=result))
    assert "Straggler: rank 1" in summary and "No rank is a straggler" not in summary


def test_the_straggler_looks_where_its_step_is_in_excess(tmp_path):
    """The facts behind the advice: the part most in excess on the slowed rank, or none."""
    from commprof.analysis.rank_findings import _excess

    result, report = found(tmp_path, ddp_rank(0, steps=3, last_us=3_000), ddp_rank(1, steps=3, late_us=3_000))
    (straggler,) = [f for f in result if f.kind == "straggler"]
    excess = _excess(report, 1)
    assert straggler.facts.look_at == max(excess, key=lambda p: excess[p])
    assert straggler.facts.look_at_ms == pytest.approx(max(excess.values()))


def test_steps_that_start_idle_waiting_for_data(tmp_path):
    """Rank 1's first operator comes 6 ms into every step (rank 0's at once, its optimizer running to the end of
    the step before): an input stall on rank 1 alone."""
    result, report = found(
        tmp_path,
        ddp_rank(0, steps=3, optimizer_us=10_000),
        ddp_rank(1, steps=3, first_op_us=6_000, optimizer_us=10_000),
    )
    stall = next(f for f in result if f.kind == "input_stall")
    assert [s.start_idle_ms for s in report.steps if s.rank == 1] == pytest.approx([6.0] * 3)
    facts = stall.facts
    # the facts of test_render_finding_words.SAID's input stall, whose words it checks
    assert (facts.rank, facts.stalled, facts.ranks, facts.idle_ms) == (1, [1], 2, pytest.approx(6.0))


def test_the_profilers_own_distortion_when_large(tmp_path):
    slowed = JobStep(61.0, 50.0)  # the job's profiled step against its step without the profiler
    result, _ = found(tmp_path, ddp_rank(0, allreduce_us=100), ddp_rank(1, allreduce_us=100), job=slowed)
    assert [(f.kind, f.gain_ms) for f in result] == [("profiler_distortion", None)]
    assert result[0].facts.slowdown == pytest.approx(0.22)
    (tmp_path / "mild").mkdir()
    assert found(tmp_path / "mild", ddp_rank(0, allreduce_us=100), job=JobStep(52.0, 50.0))[0] == []


def test_the_ceiling_from_commprof_bench_on_this_host(tmp_path):
    """With a bench of this host at 5 GB/s: the 25 MiB bucket would take 5.24 ms and end 15.24 ms into the
    backward, the 1 MiB one 0.21 ms from 20: 0.21 ms exposed instead of 2, 1.79 ms gained."""
    paths = [two_bucket_rank(r).write(tmp_path / f"rank{r}.json") for r in (0, 1)]
    analysis = analyze_run(load_run(paths, workers=1), "t", "run")
    bench = (5.0, LinkSource("bench", given="b1"))
    (bucket,), _ = findings(Evidence(analysis.report, analysis.windows, analysis.matching, ceiling=bench))
    assert bucket.facts.slow.top_gbps == 5.0 and bucket.facts.slow.top == LinkSource("bench", given="b1")


def test_the_newest_bench_of_the_same_hosts_and_backend_is_the_ceiling(tmp_path):
    """A bench of one host is the ceiling of a run on that host, a bench across two hosts that of a run across the
    same two; a bench from before benches had `hosts` counts as one of its `host`."""
    import json
    import os

    from commprof.commands.reporting import bench_ceiling

    def bench(name, hosts, busbw, mtime):
        folder = tmp_path / name
        folder.mkdir()
        fits = [
            {"backend": "gloo", "op": "all_reduce", "busbw_gbps": busbw},
            {"backend": "nccl", "op": "all_reduce", "busbw_gbps": 100.0},
        ]
        where = {"host": hosts} if isinstance(hosts, str) else {"host": hosts[0], "hosts": hosts}
        (folder / "report.json").write_text(json.dumps({"kind": "bench", "name": name, **where, "fits": fits}))
        (folder / "bench.csv").write_text("")
        os.utime(folder / "bench.csv", (mtime, mtime))

    bench("old", "node0", 3.0, 1_000)
    bench("new", ["node0", "node0"], 4.0, 2_000)
    bench("elsewhere", "node1", 9.0, 3_000)
    bench("across", ["node0", "node1"], 0.05, 4_000)
    (tmp_path / "a-run").mkdir()
    (tmp_path / "a-run" / "report.json").write_text("{}")
    assert bench_ceiling(tmp_path, {"node0"}, "gloo") == (4.0, LinkSource("bench", given="new"))
    assert bench_ceiling(tmp_path, {"node0", "node1"}, "gloo") == (0.05, LinkSource("bench", given="across"))
    assert bench_ceiling(tmp_path, {"node2"}, "gloo") is None and bench_ceiling(tmp_path, {"node0"}, "mpi") is None


def test_a_scripts_own_ddp_arguments_are_its_current_setting():
    """A script that builds DDP(bucket_cap_mb=1) trains with 1 MB buckets, whatever commprof's default; what
    commprof applied on top (a sweep's setting) wins; Lightning's DDPStrategy is named as the builder."""
    from commprof.analysis.evidence import current_options
    from commprof.results.report import Report

    def run(asked, applied, built_by="script"):
        built = [BuiltDDP("Net", built_by, asked=asked, applied=applied)]
        return Report("r", "run", "", [], [], [], run=run_summary(script=["train.py"], job=Job(built)))

    options, framework = current_options(run({"bucket_cap_mb": 1, "static_graph": False}, {}))
    assert (options.bucket_cap_mb, framework) == (1, "script")
    options, framework = current_options(run({"bucket_cap_mb": None}, {"bucket_cap_mb": 10.0}, "lightning"))
    assert (options.bucket_cap_mb, framework) == (10.0, "lightning")
    options, _ = current_options(Report("r", "run", "", [], [], [], run=run_summary(50.0)))
    assert options.bucket_cap_mb == 50.0


def test_the_current_cap_is_none_when_nobody_gave_one():
    """A script that passes no bucket_cap_mb trains with DDP's default layout (a 1 MB first bucket), not with an
    explicit 25; commprof's built-in runs always pass theirs."""
    from commprof.analysis.evidence import current_cap
    from commprof.kinds.ddp_buckets import layout
    from commprof.results.report import Report

    def script(asked, applied):
        built = [BuiltDDP("Net", asked=asked, applied=applied)]
        return Report("r", "run", "", [], [], [], run=run_summary(script=["train.py"], job=Job(built)))

    assert current_cap(script({"bucket_cap_mb": None}, {})) is None
    assert layout([5 * MB] * 5, None) == (5 * MB, 20 * MB)
    assert current_cap(script({"bucket_cap_mb": 1}, {})) == 1.0
    assert current_cap(script({"bucket_cap_mb": None}, {"bucket_cap_mb": 10.0})) == 10.0
    assert current_cap(Report("r", "run", "", [], [], [], run=run_summary(25.0))) == 25.0


def test_every_kind_of_finding_is_declared_once_and_documented():
    """analysis/finding_kinds.FINDING_KINDS is the one table: a finding of another kind, or with another kind's facts,
    cannot be made; the report schema lists exactly these; the facts' union holds each kind's; render/ says what each
    weighs and has words for each one's facts."""
    import re

    from commprof.analysis.finding_kinds import FINDING_KINDS
    from commprof.render.finding_words import SAID, WEIGHS
    from commprof.results.finding_facts import FACTS_OF, ProfilerDistortion
    from commprof.results.report import Finding

    with pytest.raises(ValueError, match="unknown kind of finding"):
        Finding("bucket_size")
    with pytest.raises(ValueError, match="unknown kind of finding"):
        Finding("bucket_cap", facts=ProfilerDistortion(0.2))
    names = {kind.name for kind in FINDING_KINDS}
    assert len(names) == len(FINDING_KINDS) and names == set(FACTS_OF)
    schema = (REPO / "docs" / "report-schema.md").read_text()
    row = next(line for line in schema.splitlines() if line.startswith("| `kind` | one of"))
    assert set(re.findall(r"`([a-z_]+)`", row)) - {"kind"} == names
    assert {kind.name for kind in FINDING_KINDS if kind.weighed != "note"} == set(WEIGHS)
    assert {kind.facts for kind in FINDING_KINDS} == set(SAID)


def test_a_claim_that_one_rank_differs_needs_its_whole_interval_at_the_practical_share():
    """One launch measures its own spread, not the next launch's: on a 67 ms step (3% is 2.0 ms) the identical ranks'
    straggler of 2.1 ms (95% CI 0.04 to 5.65) is no claim, a bucket size's gain of the same interval is, and a rank
    slowed 30 ms (24 to 36) is."""
    from commprof.analysis.findings import claimed
    from commprof.results.common import Estimate
    from commprof.results.report import Finding

    def finding(kind: str, low: float, value: float, high: float) -> Finding:
        return Finding(kind=kind, gain_ms=Estimate(value, low, high))

    for kind in ("straggler", "stalls_now_and_then", "input_stall"):
        assert not claimed(finding(kind, 0.04, 2.1, 5.65), 67.0), kind
        assert claimed(finding(kind, 24.0, 30.0, 36.0), 67.0), kind
    assert claimed(finding("bucket_cap", 0.04, 2.1, 5.65), 67.0)
    assert not claimed(finding("input_stall", 0.12, 0.13, 0.18), 2.6)  # 5% of a 2.6 ms step, but under 0.5 ms
    assert not claimed(finding("bucket_cap", -0.5, 2.1, 5.65), 67.0)
