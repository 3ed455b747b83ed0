"""The whole run, end to end: real 2-rank Gloo runs whose every step is recorded without the profiler."""

import pytest

from commprof.results.step_ledger import read_ledgers
from tests.conftest import commprof_here, load_json

pytestmark = pytest.mark.slow


def test_no_whole_run_records_nothing_and_its_report_has_no_section(tmp_path):
    result = commprof_here(
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
