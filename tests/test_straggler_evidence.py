"""Stragglers by evidence, on any host (issue 39, item 4): a rank late in every step that costs the others 3% of
the step or more is named wherever its time goes (forward, backward, input), CPU ranks sharing one host included;
when none is named, the cross-rank summary gives the one reason that held (the facts it is said from here; their
words: test_render_skew_words.py). Hand-built traces (times in microseconds), every number worked out by hand;
then a real run whose rank 0 sleeps in a gradient hook."""

import dataclasses

import pytest

from commprof.analysis.analyze import analyze_run
from commprof.analysis.evidence import Evidence
from commprof.analysis.findings import findings
from commprof.render.skew_text import skew_summary
from commprof.trace.load import load_run
from tests.tracebuilder import GLOO, TraceBuilder

STEP_US = 50_000


def rank_trace(rank: int, late_us: list[float], where: str = "backward", last_us: list[float] | None = None):
    """One CPU rank on host node0, a 50 ms step per entry of `late_us`: forward [0, 10] ms, backward [10, 30], a
    1 MiB all-reduce launched when the backward ends and done 10 ms after the last rank's arrival (`last_us`: how
    late that rank was, by default this one), then the optimizer for 5 ms. That step's `late_us` makes this rank
    arrive late at the all-reduce, spent in its forward, its backward (a slow gradient hook), or before its first
    operator (`input`: waiting for its batch)."""
    trace = TraceBuilder(rank=rank)
    trace.header["host_name"] = "node0"  # one host, CPU ranks: they share its cores
    for k, (late, last) in enumerate(zip(late_us, last_us or late_us, strict=True)):
        t = k * STEP_US
        idle = late if where == "input" else 0.0
        forward = 10_000 + (late if where == "forward" else 0.0)
        backward = 20_000 + (late if where == "backward" else 0.0)
        trace.step(k + 1, t, STEP_US)
        trace.x("aten::mm", t + idle, forward)
        trace.x("autograd::engine::evaluate_function: MmBackward0", t + idle + forward, backward)
        ready = t + 30_000 + late
        trace.x("c10d::allreduce_", ready, 10)
        done = t + 40_000 + last
        trace.x("gloo:all_reduce", ready, done - ready, cat="user_annotation", thread=GLOO, Input_Dims=[[262_144]])
        trace.x("aten::add_", done, 5_000)
    return trace


def analysed(tmp_path, *ranks: TraceBuilder, waits=None):
    """The report with its claims and what was weighed within the noise, as `commprof run` writes it."""
    paths = [r.write(tmp_path / f"rank{i}.json") for i, r in enumerate(ranks)]
    analysis = analyze_run(load_run(paths, workers=1), "t", "run", None)
    claims, noise = findings(Evidence(analysis.report, analysis.windows, analysis.matching, waits=waits or {}))
    return dataclasses.replace(analysis.report, findings=claims, within_noise=noise)


def named(report):
    return next((f for f in report.findings if f.kind == "straggler"), None)


def within_noise(report):
    """The straggler finding weighed and kept within the noise: the one reason none is named."""
    return next(f for f in report.within_noise if f.kind == "straggler")


@pytest.mark.parametrize("where", ["backward", "forward", "input"])
def test_a_rank_late_in_every_step_is_the_straggler_wherever_its_time_goes(tmp_path, where):
    """Rank 1 is 3 ms late at the all-reduce in each of 4 steps: rank 0 waits 3 ms a step, 6% of the 50 ms step,
    every step. Two CPU ranks on one host, and named all the same, with the part of the step that grew."""
    late = [3_000.0] * 4
    report = analysed(tmp_path, rank_trace(0, [0.0] * 4, where, late), rank_trace(1, late, where))
    straggler = named(report)
    assert straggler is not None and straggler.facts.rank == 1
    assert straggler.gain_ms.value == pytest.approx(3.0) and straggler.gain_ms.low == pytest.approx(3.0)
    assert straggler.gain_pct == pytest.approx(6.0)
    facts = straggler.facts
    assert (facts.late_steps, facts.profiled_steps) == (4, 4) and facts.look_at_ms == pytest.approx(3.0)
    look_at = ("start_idle_ms", None) if where == "input" else ("compute_ms", where)
    assert (facts.look_at, facts.phase) == look_at
    skew = report.cross_rank
    assert (skew.straggler, skew.straggler_cost_ms, skew.straggler_ops) == (1, pytest.approx(3.0), {"all_reduce": 3.0})
    assert "worth acting on" not in skew_summary(report)  # named: the summary gives no reason it is not


def test_a_rank_late_in_half_the_steps_is_not_consistent(tmp_path):
    """Rank 1 is 3 ms late in steps 1 and 3 only: a cost per step of 3, 0, 3, 0 ms, median 1.5, whose interval
    (four steps: their whole range, 0 to 3) widened for a rerun by sqrt(2) is 1.5 -+ 2.12: -0.6 to 3.6 ms."""
    now_and_then = [3_000.0, 0.0, 3_000.0, 0.0]
    report = analysed(tmp_path, rank_trace(0, [0.0] * 4, last_us=now_and_then), rank_trace(1, now_and_then))
    assert named(report) is None and report.cross_rank.straggler == 1
    assert report.cross_rank.straggler_cost_ms == pytest.approx(1.5)
    gain = within_noise(report).gain_ms  # its interval includes 0: not late consistently
    assert (gain.value, gain.low, gain.high) == pytest.approx((1.5, 1.5 - 1.5 * 2**0.5, 1.5 + 1.5 * 2**0.5))


def test_a_rank_late_in_every_step_by_little_is_under_the_practical_share(tmp_path):
    """Rank 1 is 0.5 ms late in every step: consistent (0.5 to 0.5 ms), but 1% of the 50 ms step."""
    report = analysed(tmp_path, rank_trace(0, [0.0] * 4, last_us=[500.0] * 4), rank_trace(1, [500.0] * 4))
    assert named(report) is None and report.cross_rank.straggler == 1
    assert report.cross_rank.straggler_cost_ms == pytest.approx(0.5)
    weighed = within_noise(report)  # its interval excludes 0, but under the practical share of the step
    assert (weighed.gain_ms.value, weighed.gain_ms.low, weighed.gain_ms.high) == pytest.approx((0.5, 0.5, 0.5))
    assert weighed.gain_pct == pytest.approx(1.0)


def test_one_step_is_too_few_to_weigh(tmp_path):
    """One profiled step and no record of the others: no interval, so no straggler, and the summary says why."""
    report = analysed(tmp_path, rank_trace(0, [0.0], last_us=[3_000.0]), rank_trace(1, [3_000.0]))
    assert named(report) is None and not report.within_noise and report.cross_rank.straggler == 1
    assert report.cross_rank.straggler_cost_ms == pytest.approx(3.0)


def test_the_whole_runs_steps_weigh_with_the_profiled_ones(tmp_path):
    """Rank 1 late 3 ms in each of 4 profiled steps; over 12 unprofiled steps of the whole run it made the others
    wait 3 ms in all 12 (named: 16 of 16 steps), or in 6 only (10 of 16 steps; the interval, the 4th to the 13th of
    them, 0 to 3 ms, includes 0: not named, where the profiled window alone would have named it)."""
    every, half = [3.0] * 12, [3.0, 0.0] * 6
    ranks = [rank_trace(0, [0.0] * 4, last_us=[3_000.0] * 4), rank_trace(1, [3_000.0] * 4)]
    (tmp_path / "every").mkdir()
    report = analysed(tmp_path / "every", *ranks, waits={0: dict.fromkeys(range(12), 0.0), 1: dict(enumerate(every))})
    straggler = named(report)
    assert straggler is not None
    facts = straggler.facts
    assert (facts.late_steps, facts.profiled_steps, facts.unprofiled_steps) == (16, 4, 12)
    (tmp_path / "half").mkdir()
    report = analysed(tmp_path / "half", *ranks, waits={0: dict.fromkeys(range(12), 0.0), 1: dict(enumerate(half))})
    assert named(report) is None
    weighed = within_noise(report)
    assert (weighed.facts.late_steps, weighed.facts.unprofiled_steps) == (10, 12)
    assert weighed.gain_ms.low <= 0 < weighed.gain_ms.high  # not late consistently, weighed over the run


def test_waits_at_buckets_in_flight_at_once_count_once(tmp_path):
    """Two all-reduces launched together at the backward's end, in flight at once (Gloo runs two): rank 1 is 3 ms
    late at both, so 6 ms are charged to it a step; but its own step is only 3 ms longer outside communication, so
    it costs the others 3 ms a step, 6% of the step, and the evidence says what bounded it."""
    traces = []
    for rank, late in ((0, 0.0), (1, 3_000.0)):
        trace = TraceBuilder(rank=rank)
        trace.header["host_name"] = "node0"
        for k in range(4):
            t = k * STEP_US
            trace.step(k + 1, t, STEP_US)
            trace.x("aten::mm", t, 10_000)
            trace.x("autograd::engine::evaluate_function: MmBackward0", t + 10_000, 20_000 + late)
            for bucket in range(2):
                trace.x("c10d::allreduce_", t + 30_000 + late + bucket, 1)
                trace.x("gloo:all_reduce", t + 30_000 + late + bucket, 10_000 + 3_000 - late, cat="user_annotation",
                        thread=(GLOO[0], GLOO[1] + bucket), Input_Dims=[[262_144]])  # fmt: skip
            trace.x("aten::add_", t + 43_000 + bucket, 5_000)
        traces.append(trace)
    report = analysed(tmp_path, *traces)
    assert report.cross_rank.straggler_cost_ms == pytest.approx(6.0, abs=0.01)
    straggler = named(report)
    assert straggler is not None and straggler.gain_ms.value == pytest.approx(3.0, abs=0.01)
    assert straggler.facts.bounded_ms == pytest.approx(3.0, abs=0.01)
