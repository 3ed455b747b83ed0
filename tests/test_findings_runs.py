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
