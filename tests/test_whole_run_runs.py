"""The whole run, end to end: real 2-rank Gloo runs whose every step is recorded without the profiler."""

import pytest

from commprof.results.step_ledger import read_ledgers
from tests.conftest import REPO, commprof, load_json

pytestmark = pytest.mark.slow
SLEEPER = REPO / "tests" / "data" / "scripts" / "slow_every_10th_step_on_rank1.py"


def test_a_rank_slow_now_and_then_is_found_though_the_window_looks_balanced(shared_runs):
    """Rank 1 stalls 200 ms at steps 10, 20, ..., 60; the profiler records steps 12-18, between two of them. The run
    is the first of tests/test_reproducible.py's three (the same arguments): made once."""
    folder = shared_runs("now-and-then0", "--schedule", "10,1,7", "--", str(SLEEPER))
    report = load_json(folder / "report.json")
    whole = report["whole_run"]
    assert whole["steps"] == 60 and whole["ranks"] == [0, 1]
    by_step = {s["step"]: s for s in whole["standouts"]}
    for step in range(10, 61, 10):
        assert by_step[step]["rank"] == 1, by_step[step]
        assert 190 <= by_step[step]["lost_ms"] <= 400  # the 200 ms stall, beyond the usual step
        assert by_step[step]["collective"] == "all_reduce" and by_step[step]["collective_bytes"] > 0  # rank 0's wait
        assert by_step[step]["waited_ms"] >= 190
    assert whole["slow_rank"] == 1 and whole["slow_rank_every"] == 10
    assert whole["window"]["first_step"] == 12 and whole["window"]["last_step"] == 18
    # the window itself: no step of it stalled, and no straggler in it
    assert max(s["window_ms"] for s in report["steps"]) < 100
    kinds = {f["kind"]: f for f in report["findings"]}
    assert "straggler" not in kinds
    # the whole run's finding: rank 1, the six stalls, with a gain whose interval excludes zero
    stalls = kinds["stalls_now_and_then"]
    assert stalls["title"].startswith("rank 1 stalls now and then")
    assert "steps 10, 20, 30, 40, 50, 60, every 10 steps" in stalls["evidence"]
    assert stalls["gain_ms"]["low"] > 0
    page = (folder / "report.md").read_text()
    assert "rank 1" in page and "every 10" in page


def test_no_whole_run_records_nothing_and_its_report_has_no_section(tmp_path):
    result = commprof(
        "run",
        "--steps",
        "4",
        "--schedule",
        "1,1,2",
        "--batch-size",
        "8",
        "--run-id",
        "window-only",
        "--no-whole-run",
        "--quiet",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert read_ledgers(tmp_path / "traces" / "window-only") == {}
    assert load_json(tmp_path / "reports" / "window-only" / "report.json")["whole_run"] is None


def test_a_built_in_run_records_every_step_of_every_rank_with_its_all_reduces(cpu_run):
    cwd, _ = cpu_run  # the shared real run: 9 steps, the profiler's window among them
    ledgers = read_ledgers(cwd / "traces" / "e2e")
    run = load_json(cwd / "traces" / "e2e" / "run.json")
    assert sorted(ledgers) == [0, 1]
    for rank, ledger in ledgers.items():
        assert ledger.steps == 9 and [e.step for e in ledger.recent] == list(range(1, 10))
        # the step times are the run's own (run.json), each all-reduce inside its step
        assert [e.step_ms for e in ledger.recent] == run["ranks"][rank]["step_ms"]
        for entry in ledger.recent:
            assert entry.calls and all(c.op == "all_reduce" for c in entry.calls)
            assert all(0 <= c.start_ms and c.start_ms + c.duration_ms <= entry.step_ms for c in entry.calls)
        # the buckets DDP built: the same bytes in every step after the first (DDP rebuilds them once)
        assert len({tuple(c.bytes for c in e.calls) for e in ledger.recent[1:]}) == 1
        assert sum(c.bytes for c in ledger.recent[-1].calls) == run["parameter_bytes"]
