"""Many ranks: the analysis keeps only small per-rank records, and reports stay readable."""

import json
import subprocess
import sys

import pytest

from commprof.analysis.digest import MAX_DETAILED_RANKS, digest
from commprof.render.tables import MAX_RANK_ROWS, TOP_RANKS
from commprof.results.store import load_report
from commprof.trace.load import load_run, load_run_with
from tests.conftest import REPO, TRACES, commprof_here

SOURCE = TRACES / "gloo-cpu-rank34-of-300" / "rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"
RANKS = 24
pytestmark = pytest.mark.slow  # the trace copies are parsed in parallel processes


def make_ranks(folder, ranks=RANKS):
    subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks" / "generate" / "make_rank_traces.py"),
            str(SOURCE),
            str(folder),
            "--ranks",
            str(ranks),
        ],
        check=True,
        capture_output=True,
    )


def test_report_of_many_ranks_is_summarised(tmp_path):
    make_ranks(tmp_path / "job")
    result = commprof_here("analyze", str(tmp_path / "job"), "--name", "many", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    report = load_report(tmp_path / "reports" / "many" / "report.json")
    assert [r.rank for r in report.ranks] == list(range(RANKS))  # every rank in report.json
    assert report.cross_rank.straggler == RANKS // 3  # the 15% slower copy
    markdown = (tmp_path / "reports" / "many" / "report.md").read_text()
    for label in ("min of 24", "p50 of 24", "p90 of 24", "p99 of 24", "max of 24", "(slowest #1)", "(costliest #1)"):
        assert label in markdown, label
    assert f"rank {RANKS // 3} (slowest #1)" in markdown
    breakdown = markdown.split("## Where the step goes")[1].split("##")[0]
    assert len([line for line in breakdown.splitlines() if line.startswith("| ")]) == 1 + 5 + TOP_RANKS
    assert RANKS > MAX_RANK_ROWS
    assert "(slowest #1)" in result.stdout  # the terminal shows the same summary
    timeline = json.loads((tmp_path / "reports" / "many" / "timeline.json").read_text())
    assert {e["pid"] for e in timeline["traceEvents"]} == set(range(RANKS))  # all, as 24 <= MAX_DETAILED_RANKS


def test_ranks_beyond_the_detailed_ones_travel_without_intervals(tmp_path):
    make_ranks(tmp_path / "job", ranks=MAX_DETAILED_RANKS + 2)
    run, breakdowns = load_run_with([tmp_path / "job"], 2, digest)
    detailed = [r for r in run.ranks if r.rank < MAX_DETAILED_RANKS]
    slim = [r for r in run.ranks if r.rank >= MAX_DETAILED_RANKS]
    assert len(slim) == 2 and all(r.intervals_dropped and not r.compute and breakdowns[r.path] for r in slim)
    assert all(r.compute and not r.intervals_dropped for r in detailed)
    # the same breakdowns either way: rank 64 is a stretched copy like rank 0, computed before dropping
    full = load_run([tmp_path / "job" / f"rank{MAX_DETAILED_RANKS}.pt.trace.json.gz"])
    from commprof.analysis.breakdown import breakdown_step, step_windows

    (rank,) = full.ranks
    assert list(breakdowns[slim[0].path]) == [breakdown_step(rank, w) for w in step_windows(rank)]
