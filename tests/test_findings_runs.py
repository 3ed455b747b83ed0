"""Findings on real runs: a script whose rank 1 waits 40 ms for every batch must get the input stall on rank 1
and rank 1 as the straggler, with the idle before its first operator named as what is slow."""

import json

import pytest

from tests.conftest import REPO

pytestmark = [pytest.mark.slow, pytest.mark.solo]
SCRIPT = REPO / "tests" / "data" / "scripts" / "slow_input_on_rank1.py"


def test_a_slow_input_on_one_rank(shared_runs):
    """The run is the first of tests/test_reproducible.py's three sleeper runs (the same arguments): made once."""
    folder = shared_runs("sleeper0", "--max-steps", "12", "--schedule", "3,1,6", "--", str(SCRIPT))
    report = json.loads((folder / "report.json").read_text())
    found = {f["kind"]: f for f in report["findings"]}
    assert {"input_stall", "straggler"} <= set(found), report["findings"]
    stall = found["input_stall"]
    assert stall["title"] == "the steps start idle on 1 of 2 ranks" and "rank 1 runs no operator" in stall["evidence"]
    assert 39 <= stall["gain_ms"]["value"] <= 45  # the 40 ms sleep
    straggler = found["straggler"]
    assert straggler["title"] == "rank 1 is the straggler: the others wait for it"
    assert "idle before its first operator" in straggler["action"] and straggler["gain_ms"]["low"] > 20
    assert found["input_stall"] == report["findings"][0] or found["straggler"] == report["findings"][0]
    page = (folder / "report.md").read_text()
    assert "## Findings" in page and "**1. " in page


def test_a_slow_optimizer_step_on_one_rank_is_the_straggler_in_its_optimizer_step_not_an_input_stall(tmp_path):
    """Rank 1's hook on every optimizer's step sleeps 25 ms (registered after commprof's). The step ends where
    `optimizer.step()` returns, so the hook's time is in rank 1's optimizer step, not the next step's start: rank 1
    is the straggler, told to look at its optimizer step's hooks, and no input stall is claimed (before, the 25 ms
    was the next step's idle start: 'look at rank 1's idle before its first operator (input pipeline)', and an input
    stall beside it)."""
    from tests.conftest import commprof

    script = REPO / "tests" / "data" / "scripts" / "slow_optimizer_step_on_rank1.py"
    args = ["run", "--run-id", "opt", "--max-steps", "12", "--schedule", "3,1,6", "--quiet", "--", str(script)]
    assert commprof(*args, cwd=tmp_path).returncode == 0
    report = json.loads((tmp_path / "reports" / "opt" / "report.json").read_text())
    found = {f["kind"]: f for f in report["findings"]}
    assert "input_stall" not in found and "input_stall" not in {f["kind"] for f in report["within_noise"]}
    straggler = found["straggler"]
    assert straggler["title"] == "rank 1 is the straggler: the others wait for it"
    assert straggler["action"].startswith("look at rank 1's time in its optimizer step outside any operator (+2")
    assert 22 <= straggler["gain_ms"]["value"] <= 30
    optimizer = {s["rank"]: [p for p in s["phases"] if p["phase"] == "optimizer"][0] for s in report["steps"]}
    assert optimizer[1]["window_ms"] > 24 > 5 > optimizer[0]["window_ms"]  # the hook's sleep, in rank 1's step
