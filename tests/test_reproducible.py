"""Claims survive a rerun: two identical runs never contradict each other, and the positive controls (a rank that
sleeps 40 ms a step, a bucket cap so small that per-call latency dominates) are found every time, by run, sweep,
tune and advise. A tool that never claims anything fails the controls; one that claims noise fails the repeats."""

import json

import pytest

from commprof.instrument.link_probe import REPEATS as PROBE_REPEATS
from tests.conftest import REPO, commprof, load_json

pytestmark = [pytest.mark.slow, pytest.mark.solo]
SLEEPER = REPO / "tests" / "data" / "scripts" / "slow_input_on_rank1.py"  # rank 1 sleeps 40 ms before each batch
NOW_AND_THEN = REPO / "tests" / "data" / "scripts" / "slow_every_10th_step_on_rank1.py"  # 200 ms every 10th step
DEEP_MLP = f"{REPO / 'tests' / 'data' / 'deep_mlp.py'}:build"  # 128 small parameters: 64 buckets at a tiny cap
TINY_CAP = "0.001"
REPEATS = 2  # a run and its rerun; every CI run reruns them again


def claims(report: dict) -> dict[str, str]:
    """What a report tells the user to do, by kind: the setting advised, the rank named straggler, the ranks
    stalled. Two runs contradict each other when a kind has different values in them."""
    found = {}
    for f in report["findings"]:
        if f["setting"]:
            found[f["kind"]] = json.dumps(f["setting"], sort_keys=True)
        elif f["kind"] in ("straggler", "input_stall", "stalls_now_and_then"):
            found[f["kind"]] = f["title"]
    return found


def no_contradiction(reports: list[dict]) -> None:
    every = [claims(r) for r in reports]
    for kind in set().union(*every):
        said = {c[kind] for c in every if kind in c}
        assert len(said) == 1, f"{kind}: {said} over {REPEATS} identical runs"


def runs(shared_runs, name: str, *args: str) -> list[dict]:
    """REPEATS identical runs, <name>0, <name>1, ... (shared: other tests read the first of them)."""
    return [load_json(shared_runs(f"{name}{i}", *args) / "report.json") for i in range(REPEATS)]


def test_identical_default_runs_never_contradict_each_other(shared_runs):
    reports = runs(shared_runs, "default")
    no_contradiction(reports)
    for report in reports:  # two identical CPU ranks of mlp-small: a second bucket costs no measurable latency
        assert not [f for f in report["findings"] if f["kind"] in ("bucket_cap", "straggler")], report["findings"]
        probe = report["run"]["link_probe"]
        assert probe and all(len(row["us"]) == PROBE_REPEATS for row in probe)


def test_a_sleeping_rank_is_the_straggler_every_time(shared_runs):
    """Rank 1 of a script sleeps 40 ms before each batch: named the straggler in every run, its cost to the others
    within 25% of the 40 ms it makes them wait."""
    reports = runs(shared_runs, "sleeper", "--max-steps", "12", "--schedule", "3,1,6", "--", str(SLEEPER))
    no_contradiction(reports)
    for report in reports:
        straggler = next(f for f in report["findings"] if f["kind"] == "straggler")
        assert straggler["title"] == "rank 1 is the straggler: the others wait for it"
        assert 30 <= straggler["gain_ms"]["value"] <= 50 and straggler["gain_ms"]["low"] > 0
        assert "idle before its first operator" in straggler["action"]


def test_a_rank_that_stalls_every_10th_step_is_found_every_time(shared_runs):
    """Rank 1 stalls 200 ms at steps 10, 20, ..., 60, the profiled window between two of them: every run names rank 1
    from the whole run, those six steps and no other losing 150 ms."""
    reports = runs(shared_runs, "now-and-then", "--schedule", "10,1,7", "--", str(NOW_AND_THEN))
    no_contradiction(reports)
    for report in reports:
        stalls = next(f for f in report["findings"] if f["kind"] == "stalls_now_and_then")
        assert stalls["title"].startswith("rank 1 stalls now and then") and stalls["gain_ms"]["low"] > 0
        whole = report["whole_run"]
        stalls = [s for s in whole["standouts"] if s["lost_ms"] >= 150]
        assert [(s["step"], s["rank"]) for s in stalls] == [(step, 1) for step in range(10, 61, 10)]
        assert whole["slow_rank"] == 1 and whole["slow_rank_every"] == 10


def test_a_tiny_bucket_cap_loses_every_time(shared_runs):
    """64 all-reduces a step where DDP's default makes one: every run advises the one bucket, advise measures it
    faster in interleaved repeats (a sweep of the two caps: its repeats are the reruns)."""
    reports = runs(shared_runs, "tiny", "--model", DEEP_MLP, "--bucket-cap-mb", TINY_CAP)
    no_contradiction(reports)
    for report in reports:
        bucket = next(f for f in report["findings"] if f["kind"] == "bucket_cap")
        assert bucket["setting"] == {"bucket_cap_mb": 25} and "saves all-reduce calls" in bucket["title"]
        assert bucket["gain_ms"]["low"] > 0 and "64 buckets" in bucket["evidence"]

    result = commprof("advise", "tiny0", "--json", "--quiet", cwd=shared_runs.cwd)
    assert result.returncode == 0, result.stderr
    checked = {s["label"]: s for s in json.loads(result.stdout)["sweep"]["settings"]}
    assert checked["bucket-25mb"]["significant"] and checked["bucket-25mb"]["gain_ms"]["low"] > 0
    assert checked["bucket-25mb"]["speedup"]["low"] > 1
