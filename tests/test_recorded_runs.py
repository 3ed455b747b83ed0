"""What a run finds, on runs recorded once from real launches (benchmarks/generate/record_runs.py; each folder's
README says how) and replayed in-process through load, analysis and findings: the facts each script's truth makes
certain. That these truths hold launch after launch, not in one recorded launch, is the straggler grid's and the
reproducibility check's to show (benchmarks/check/straggler_grid.py, benchmarks/check/reproducible.py; their last
results in docs/benchmarks.md)."""

import pytest

from commprof.commands.reporting import report_from_traces
from commprof.launch.runlog import read_run_json as load_run_json
from commprof.results.report import Report
from tests.conftest import REPO

DATA = REPO / "tests" / "data"
CLAIMS_ABOUT_RANKS = ("straggler", "stalls_now_and_then", "input_stall")


def replayed(name: str) -> Report:
    return report_from_traces([DATA / name], name, "analysis", workers=1)[0]


def found(report: Report, kind: str):
    return next(f for f in report.findings if f.kind == kind)


@pytest.mark.parametrize("name", ["slow-backward", "slow-backward-two-buckets"])
def test_a_rank_slowed_inside_its_backward_is_the_straggler(name):
    """Rank 0 sleeps 30 ms in a gradient hook every step (slow_backward_on_rank0.py; with 1.3M parameters the sleep
    falls between two DDP buckets): the straggler, costing the other rank about the 30 ms, its compute in excess."""
    straggler = found(replayed(name), "straggler")
    assert straggler.facts.rank == 0 and straggler.facts.look_at == "compute_ms"
    assert 20 <= straggler.gain_ms.value <= 45 and straggler.gain_ms.low > 0


def test_identical_ranks_claim_nothing_about_a_rank():
    """slowed_phase.py with no rank slowed, two buckets: no straggler, stalls or input stall claimed."""
    report = replayed("identical-ranks")
    assert not [f.kind for f in report.findings if f.kind in CLAIMS_ABOUT_RANKS]


def test_a_rank_slower_only_for_what_shares_its_core_is_not_the_jobs_straggler():
    """Each rank held to a core of its own, a busy loop on rank 1's (shares_a_core.py): its lateness is its wait for
    a core, which another launch places elsewhere: not claimed, and the one weighed knows the core's wait."""
    report = replayed("shares-a-core")
    assert not [f for f in report.findings if f.kind == "straggler"]
    weighed = next(f for f in report.within_noise if f.kind == "straggler")
    assert weighed.facts.rank == 1 and weighed.facts.core_ms > 1.0


def test_a_rank_that_sleeps_with_nothing_on_its_core_is_the_straggler():
    straggler = found(replayed("shares-a-core-sleeps"), "straggler")
    assert straggler.facts.rank == 1 and 20 <= straggler.gain_ms.value <= 45 and straggler.gain_ms.low > 0


def test_a_slow_input_on_one_rank_is_its_input_stall_and_the_straggler():
    """Rank 1 waits 40 ms for every batch (slow_input_on_rank1.py)."""
    report = replayed("slow-input")
    stall, straggler = found(report, "input_stall"), found(report, "straggler")
    assert stall.facts.stalled == [1] and 39 <= stall.gain_ms.value <= 45
    assert straggler.facts.rank == 1 and straggler.facts.look_at == "start_idle_ms"
    assert straggler.gain_ms.low > 20
    assert {report.findings[0].kind} <= {"input_stall", "straggler"}


def test_a_slow_optimizer_step_on_one_rank_is_the_straggler_in_its_optimizer_step_not_an_input_stall():
    """Rank 1's hook on every optimizer step sleeps 25 ms: the step ends where optimizer.step() returns, so that
    time is its optimizer step's, not the next step's start."""
    report = replayed("slow-optimizer-step")
    assert "input_stall" not in {f.kind for f in report.findings + report.within_noise}
    straggler = found(report, "straggler")
    assert straggler.facts.rank == 1 and straggler.facts.look_at == "optimizer_idle_ms"
    assert 22 <= straggler.gain_ms.value <= 30
    optimizer = {s.rank: next(p for p in s.phases if p.phase == "optimizer") for s in report.steps}
    assert optimizer[1].window_ms > 24 > 5 > optimizer[0].window_ms


def test_a_rank_that_stalls_every_10th_step_is_found_from_the_whole_run():
    """Rank 1 stalls 200 ms at steps 10, 20, ..., 60, the profiled window between two of them."""
    report = replayed("now-and-then")
    stalls = found(report, "stalls_now_and_then")
    assert (stalls.facts.rank, stalls.facts.steps, stalls.facts.every) == (1, [10, 20, 30, 40, 50, 60], 10)
    assert stalls.gain_ms.low > 0 and "straggler" not in {f.kind for f in report.findings}
    whole = report.whole_run
    assert whole.steps == 60 and whole.ranks == [0, 1] and (whole.window.first_step, whole.window.last_step) == (12, 18)
    by_step = {s.step: s for s in whole.standouts if s.lost_ms >= 150}
    assert sorted(by_step) == list(range(10, 61, 10))
    for standout in by_step.values():  # the 200 ms stall beyond the usual step, rank 0 waiting in an all-reduce
        assert standout.rank == 1 and 190 <= standout.lost_ms <= 400 and standout.waited_ms >= 190
        assert standout.collective == "all_reduce" and standout.collective_bytes
    assert whole.slow_rank == 1 and whole.slow_rank_every == 10
    assert max(s.window_ms for s in report.steps) < 100  # the window itself stalled nowhere


def test_a_tiny_bucket_cap_is_advised_ddps_default():
    """deep_mlp.py's 128 small parameters at bucket_cap_mb=0.001: 64 buckets a step where DDP's default makes one."""
    bucket = found(replayed("tiny-cap"), "bucket_cap")
    assert bucket.setting == {"bucket_cap_mb": 25} and bucket.gain_ms.low > 0
    assert len(bucket.facts.buckets_now) == 64 and len(bucket.facts.buckets_then) == 1


def test_joins_shadow_steps_are_told_apart_from_a_ranks_own():
    """Rank 0 has 30 batches, rank 1 40, under Join with ZeroRedundancyOptimizer: rank 0's optimizer steps with the
    others 10 more times in Join's shadow. Its own steps are 30, the job's 40 (before: 40 of rank 0's own)."""
    report = replayed("join-uneven")
    assert report.run.joined_steps == {"0": 10} and report.run.steps_completed == 40
    assert [len(r.step_ms) for r in load_run_json(DATA / "join-uneven").ranks] == [30, 40]


def test_torchs_zero_redundancy_optimizer_is_recognised_and_its_broadcasts_named_as_its_own():
    """The broadcasts in ZeroRedundancyOptimizer's step are each rank's updated shard (issue 72: before, 'ZeRO'
    meant DeepSpeed alone, and its broadcasts had no purpose)."""
    from commprof.trace.rules import ZERO_REDUNDANCY_PURPOSE

    report = replayed("join-uneven")
    assert report.run.optimizer == "ZeroRedundancyOptimizer"
    broadcasts = [c for c in report.collectives if c.op == "broadcast"]
    assert broadcasts and all(c.purpose == ZERO_REDUNDANCY_PURPOSE and c.phase == "optimizer" for c in broadcasts)
    assert all(c.purpose is None for c in report.collectives if c.op == "all_reduce")  # DDP's, not ZeRO's


def test_ddps_own_measurements_match_the_trace():
    """commprof's own model, every step profiled (tests/data/ddp-every-step), DDP logging every step: its three
    backward figures (run.json) and the trace's agree within 15% or 2 ms. No warm-up step: DDP's averages include
    the first step (slower, its buckets not yet rebuilt), and so must the trace's."""
    import json

    from commprof.analysis.buckets import backward_times
    from commprof.trace.load import load_run

    folder = DATA / "ddp-every-step"
    meta = json.loads((folder / "run.json").read_text())
    for rank in load_run(sorted(folder.glob("rank*.pt.trace.json.gz")), workers=1).ranks:
        ours, ddp = backward_times(rank), meta["ranks"][rank.rank]["ddp"]
        pairs = [
            (ddp["avg_backward_compute_time"], ours.compute_ms),
            (ddp["avg_backward_comm_time"], ours.comm_ms),
            (ddp["avg_backward_compute_comm_overlap_time"], ours.overlap_ms),
        ]
        for ddp_ns, trace_ms in pairs:
            assert abs(ddp_ns / 1e6 - trace_ms) <= max(0.15 * trace_ms, 2.0), pairs
