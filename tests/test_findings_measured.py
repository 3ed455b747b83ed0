"""Compression, accumulation and a larger batch decided by what the run measured (analysis/setting_findings.py), on
hand-built reports whose every number is checked by eye.

Both ranks are test_findings.ddp_rank's over Gloo on CPU: each 50 ms step computes 40 ms (forward 10, backward 20,
tail 10) and all-reduces one 25 MiB bucket for 10 ms after the backward. On CPU ranks the model counts every
all-reduce in full: 10 ms per step. The run's link probe says what 25 MiB take on the link; its cast probe what a
cast to 16 bits and back costs (cast_us interpolates between the probed sizes)."""

import pytest

from commprof.analysis.analyze import analyze_run
from commprof.analysis.evidence import Evidence
from commprof.analysis.findings import findings
from commprof.analysis.predict import MB
from commprof.analysis.setting_findings import cast_us
from commprof.config import RunConfig
from commprof.instrument.link_probe import tier_groups
from commprof.results.run_record import CastCost, ProbedSize, RunSummary
from commprof.settings import DDPOptions
from commprof.trace.load import load_run
from tests.conftest import run_summary
from tests.test_findings import ddp_rank, found, nccl_rank

KIB = 1024


def link_probe(ms_per_25_mib: float, divide: int = 1) -> list[ProbedSize]:
    """A link without latency on which 25 MiB take `ms_per_25_mib` (2 ranks: the bus factor is 1); `divide`: the
    sizes as 16-bit buffers of the probe's float32 ones (half the bytes)."""
    us_per_byte = ms_per_25_mib * 1000 / (25 * MB)
    return [ProbedSize(n // divide, [n * us_per_byte] * 5) for n in (4 * KIB, 4 * MB)]


def casts(dtype: str, us_per_25_mib: float, allreduce_ms_per_25_mib: float | None = None) -> list[CastCost]:
    """Casts that cost in proportion to the bytes; with their 16-bit all-reduces where given, as the time the 16-bit
    copy of a 25 MiB float32 bucket takes (10 ms, float32's own: a host that sums 16-bit values no faster per value;
    5 ms: the halved bytes at the link's speed)."""
    rows = []
    for n in (4 * KIB, 4 * MB, 25 * MB):
        reduced = []
        if allreduce_ms_per_25_mib is not None and n < 25 * MB:
            reduced = [p.us[0] for p in link_probe(allreduce_ms_per_25_mib) if p.bytes == n] * 5
        rows.append(CastCost(dtype, n, [n / (25 * MB) * us_per_25_mib] * 3, allreduce_us=reduced))
    return rows


def run(link_ms: float, cast_costs: list[CastCost]):
    return run_summary(parameter_sizes=[5 * MB] * 5, link_probe=link_probe(link_ms), cast_costs=cast_costs)


def make_dir(path):
    path.mkdir()
    return path


def claims(tmp_path, summary, allreduce_us=10_000.0):
    result, _ = found(
        tmp_path, ddp_rank(0, allreduce_us=allreduce_us), ddp_rank(1, allreduce_us=allreduce_us), run=summary
    )
    return {f.kind: f for f in result}


def test_cast_cost_is_the_fastest_repeat_interpolated_by_hand():
    costs = [CastCost("float16", 4 * MB, [900.0, 400.0, 500.0]), CastCost("float16", 8 * MB, [800.0, 850.0])]
    assert cast_us(costs, 2 * MB) == 400.0  # below the smallest size: its time
    assert cast_us(costs, 6 * MB) == pytest.approx(600.0)  # halfway between 400 and 800
    assert cast_us(costs, 16 * MB) == pytest.approx(1600.0)  # beyond the largest: in proportion


def test_a_slow_link_with_cheap_casts_gets_compression_with_its_net_gain(tmp_path):
    """25 MiB take 10 ms on the link: the step is 40 + 10 = 50 ms; halved, 12.5 MiB take 5 ms: 45 ms, 5 ms saved.
    A cast of the 25 MiB bucket costs 0.5 ms (fp16) or 1.0 ms (bf16): fp16 nets 4.5 ms, 9% of the 50 ms step."""
    found_ = claims(tmp_path, run(10.0, casts("float16", 500.0) + casts("bfloat16", 1000.0)))
    compression = found_["compression"]
    assert (compression.gain_ms.value, compression.gain_ms.low, compression.gain_ms.high) == pytest.approx(
        (4.5, 4.5, 4.5)
    )
    assert compression.setting == {"comm_hook": "fp16"} and compression.gain_pct == pytest.approx(9.0)
    facts = compression.facts
    assert (facts.largest_cast_us, facts.casts_ms, facts.buckets) == pytest.approx((500.0, 0.5, 1))
    assert facts.saved_ms == pytest.approx(5.0) and not facts.bf16_weighed and facts.options.comm_hook == "fp16"


def test_costly_casts_or_a_fast_link_get_no_compression(tmp_path):
    """Casts of 6 ms against the 5 ms the halved bytes save: a net loss of 1 ms, no finding at all. On a link ten
    times faster (25 MiB in 1 ms, so does the trace's all-reduce) the halved bytes save 0.5 ms against casts of
    0.6 ms: none either."""
    (tmp_path / "costly").mkdir()
    (tmp_path / "fast").mkdir()
    assert "compression" not in claims(tmp_path / "costly", run(10.0, casts("float16", 6000.0)))
    fast, _ = found(
        tmp_path / "fast",
        ddp_rank(0, allreduce_us=1_000.0),
        ddp_rank(1, allreduce_us=1_000.0),
        run=run(1.0, casts("float16", 600.0)),
    )
    assert all(f.kind != "compression" for f in fast)


def test_the_hook_is_chosen_by_what_its_bytes_take_on_the_link(tmp_path):
    """The same step on GPUs over NCCL (test_findings.nccl_rank: the all-reduce runs after the backward, 10 ms
    exposed), where torch registers either hook. fp16's casts are cheaper (0.5 ms), but its 16-bit all-reduce takes
    as long as float32's (as a host that sums float16 no faster per value would): it saves nothing and nets -0.5 ms.
    bf16's all-reduce moves its halved bytes at the link's speed: 5 ms saved less 1 ms of casts, 4.0 ms: bf16."""
    config = RunConfig(run_id="t", backend="nccl", device="cuda", ddp=DDPOptions(bucket_cap_mb=25.0))
    summary = RunSummary(
        run_id="t",
        config=config,
        parameter_sizes=[5 * MB] * 5,
        link_probe=link_probe(10.0),
        cast_costs=casts("float16", 500.0, allreduce_ms_per_25_mib=10.0) + casts("bfloat16", 1000.0, 5.0),
    )
    result, _ = found(tmp_path, nccl_rank(0), nccl_rank(1), run=summary)
    compression = next(f for f in result if f.kind == "compression")
    assert compression.setting == {"comm_hook": "bf16"} and compression.gain_ms.value == pytest.approx(4.0)
    assert compression.facts.halved_gbps is not None and compression.facts.others == {"fp16": pytest.approx(-0.5)}


def test_without_measured_casts_compression_is_an_upper_bound_never_claimed(tmp_path):
    """No cast_costs (traces from elsewhere, an older run): the halved bytes' 5 ms alone, an upper bound, kept
    within the noise."""
    paths = [r.write(tmp_path / f"rank{i}.json") for i, r in enumerate((ddp_rank(0), ddp_rank(1)))]
    analysis = analyze_run(load_run(paths, workers=1), "t", "run", run(10.0, []))
    claimed, within = findings(Evidence(analysis.report, analysis.windows, analysis.matching))
    assert all(f.kind != "compression" for f in claimed)
    compression = next(f for f in within if f.kind == "compression")
    assert compression.gain_ms.value == pytest.approx(5.0) and compression.gain_ms.low <= 0
    assert not compression.facts.casts_measured


def test_accumulation_and_a_larger_batch_with_their_gain_per_sample(tmp_path):
    """A 40 ms all-reduce on the probed link is paid by every 80 ms step of 32 samples per rank. Accumulating 4
    micro-batches under no_sync pays it once per 4: 30 ms saved per today's step, 0.938 ms per sample. A batch of 64:
    80 ms of compute and 40 ms of all-reduce for 64 samples, 60 ms per 32: 20 ms saved, 0.625 ms per sample. Whether
    to advise them is read on the trace's own communication (the probe moves between launches): 14 ms of each 50 ms
    step, 28%, is above the 25% bound in every step; where it is a fifth of the step (10 ms of 50), neither is
    advised: they change the optimisation (a larger global batch) for little."""
    found_ = claims(tmp_path, run(40.0, casts("float16", 6000.0)), allreduce_us=14_000.0)
    accumulation, batch = found_["accumulation"], found_["batch"]
    assert accumulation.gain_ms.value == pytest.approx(30.0) and batch.gain_ms.value == pytest.approx(20.0)
    assert accumulation.facts.samples_per_step == batch.facts.samples_per_step == 32  # the gain per sample: / 32
    assert (accumulation.facts.micro_batches, accumulation.facts.options.grad_accum) == (4, 4)
    assert (batch.facts.factor, batch.facts.batch_size) == (2, 32)  # commprof run ... --batch-size 64
    assert accumulation.setting == {} and batch.setting == {}  # advise's sweep compares steps, not samples
    assert accumulation.facts.share == pytest.approx(0.28) and not accumulation.facts.near_bound
    assert not {"accumulation", "batch"} & set(
        claims(make_dir(tmp_path / "light"), run(10.0, casts("float16", 6000.0)))
    )


def test_tiers_of_a_job_over_hosts():
    assert tier_groups(["a", "a"]) == []
    assert tier_groups(["a", "a", "b", "b"]) == [("network", [0, 2]), ("host", [0, 1])]
    assert tier_groups(["a", "b", "a", "b"]) == [("network", [0, 1]), ("host", [0, 2])]
    assert tier_groups(["a", "b"]) == [("network", [0, 1])]


def test_a_share_near_the_bound_is_advised_and_said_near_it(tmp_path):
    """Steps whose communication is 22% and 30% of the step, by turns: the median 26% and its interval straddle the
    25% bound, which makes the advice (its interval reaches the bound) and says it near (its low end is below)."""
    from commprof.analysis.setting_findings import communication_share
    from commprof.results.report import Report, StepBreakdown

    def step(rank: int, i: int, comm: float) -> StepBreakdown:
        return StepBreakdown(rank, f"ProfilerStep#{i}", 100.0, 100.0 - comm, comm, 0.0, comm, 0.0, 0.0)

    steps = [step(r, i, 22.0 if i % 2 else 30.0) for r in (0, 1) for i in range(10)]
    share = communication_share(Report("r", "run", "", [], [], [], steps=steps), [], serial=True)
    assert share.value == pytest.approx(0.26) and share.low < 0.25 < share.high
