"""The changes' control grid's sample (benchmarks/check/changes_grid.py runs the whole grid launch after launch;
its table is in docs/semantics.md): 2-rank Gloo runs of tests/data/scripts/stretches.py, whose truth is known,
recorded once (benchmarks/generate/record_runs.py) and replayed, against the stretches and changes of their report's
whole run; and the grid's scoring, on hand-made sections."""

import dataclasses

from benchmarks.check.changes_grid import TRUTHS, Count, score
from commprof.commands.reporting import report_from_traces
from tests.conftest import REPO


def whole_run(name: str) -> dict:
    report = report_from_traces([REPO / "tests" / "data" / name], name, "analysis", workers=1)[0]
    return dataclasses.asdict(report.whole_run)


def test_a_stretch_where_rank_0_is_late_is_named_with_its_rank():
    """Rank 0 is 60 ms late before its forward in steps 40-79 of 120."""
    whole = whole_run("stretch-late-rank")
    late = [s for s in whole["stretches"] if s["late_rank"] is not None]
    assert len(late) == 1, whole["stretches"]
    assert abs(late[0]["first_step"] - 40) <= 3 and abs(late[0]["last_step"] - 79) <= 3, late
    assert late[0]["late_rank"] == 0 and late[0]["late_ms"] > 30, late
    steps = sorted(c["step"] for c in whole["changes"] if c["kind"] == "step")
    assert len(steps) == 2 and abs(steps[0] - 40) <= 3 and abs(steps[1] - 80) <= 3, whole["changes"]


def test_a_link_that_slows_behind_the_computation_is_a_change_of_communication_alone():
    """From step 60 the first bucket's all-reduce takes 12 ms, inside the backward's 15 ms: the time with a collective
    in flight grows, the step does not."""
    whole = whole_run("comm-change")
    assert not [c for c in whole["changes"] if c["kind"] == "step"], whole["changes"]
    assert len(whole["stretches"]) == 1, whole["stretches"]
    change = [c for c in whole["changes"] if abs(c["step"] - 60) <= 3]
    assert [c["kind"] for c in change] == ["communication"], whole["changes"]
    assert change[0]["comm_ms_after"] > 2 * change[0]["comm_ms_before"], change


def test_the_grid_scores_claims_against_the_truth():
    """Hand-made sections of `two` (rank 0 late in 25-44, rank 1 in 75-94): changes within 3 steps of a true one
    match it once; a late rank is judged by the true stretch its stretch overlaps most."""

    def stretch(first, last, late=None):
        return {"first_step": first, "last_step": last, "late_rank": late}

    def change(step, kind="step"):
        return {"step": step, "kind": kind}

    right = {
        "steps": 120,
        "changes": [change(26), change(44), change(77), change(95)],
        "stretches": [stretch(1, 25), stretch(26, 43, 0), stretch(44, 76), stretch(77, 94, 1), stretch(95, 120)],
    }
    assert {k: str(c) for k, c in score(right, TRUTHS["two"]).items()} == {
        "step change": "4 / 0 / 0",
        "communication change": "0 / 0 / 0",
        "late rank": "2 / 0 / 0",
    }
    wrong = {
        "steps": 120,  # one change too far (50 for 45), one at the same true change twice (24, 25), one missed (95)
        "changes": [change(24), change(25), change(50), change(75), change(60, "communication")],
        "stretches": [stretch(1, 23), stretch(24, 24), stretch(25, 49, 1), stretch(50, 74, 1), stretch(75, 120, 1)],
    }
    counts = score(wrong, TRUTHS["two"])
    assert (counts["step change"].true, counts["step change"].false, counts["step change"].missed) == (2, 2, 2)
    assert str(counts["communication change"]) == "0 / 1 / 0"
    # rank 1 over 25-49 (true: rank 0), over 50-74 (true: none) and over 75-120 (most of it 95-120: none) is false
    assert str(counts["late rank"]) == "0 / 3 / 2"
    assert str(Count(1, 2, 3)) == "1 / 2 / 3"
