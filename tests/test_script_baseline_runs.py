"""A script written the way public ones are (argparse, its own init_process_group, DistributedDataParallel(model)
with no bucket_cap_mb) tuned and advised on 2 real Gloo ranks: the baseline is the script as written, with
the buckets DDP built for it (its 1 MiB first bucket), every launch runs --max-steps, and the lines that count the
settings count the rows of the report."""

import json

import pytest

from commprof.analysis.tune import MAX_ROUNDS
from commprof.kinds import KINDS
from commprof.render import progress_words
from commprof.render.kind_words import describe, words_of
from commprof.render.verdict_words import refined
from commprof.results.store import load_report
from commprof.results.sweep_record import SweepRecord
from commprof.settings import DDP_BUCKET_GRID_MB, DDPOptions, setting_label
from tests.conftest import REPO, built_of, commprof_here, plant_findings, planted_finding

pytestmark = pytest.mark.slow
SCRIPT = str(REPO / "tests" / "data" / "scripts" / "train_default_ddp.py")
# 2 launches a setting, a third while its comparison with the baseline is undecided (tune alone took 103 s in a CI
# run at the default 4, 30 launches)
ROUNDS = ["--repeats", "2", "--max-repeats", "3", "--warmup-steps", "1", "--profile-steps", "2"]
STEPS = 5
# its model: twelve 256x256 layers and a 256x10 head, 3,168,296 bytes of gradients. DDP(model) builds a first
# bucket that closes past 1 MiB, then the rest under 25 MiB; bucket_cap_mb=1 three of about 1 MiB; 5 or more one
OWN = [1_062_952, 2_105_344]
CAP_1 = [1_062_952, 1_052_672, 1_052_672]
ONE = [3_168_296]


def launches_of(folder):
    """Each launch's run.json in a script sweep's folder, by its name."""
    return {p.parent.name: json.loads(p.read_text()) for p in folder.glob("*/run.json")}


@pytest.mark.takes(60, "tune launches each setting 2-3 times, may refine the grid, then confirms in fresh pairs")
def test_tune_of_a_script_counts_what_it_measures(tmp_path):
    result = commprof_here("tune", *ROUNDS, "--max-steps", str(STEPS), "--run-id", "tu", "--", SCRIPT, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    sweep = load_report(tmp_path / "reports" / "tu").sweep
    rows = [s.label for s in sweep.settings]
    lines = result.stderr.splitlines()
    # what it will launch: the script's own setting and the coarse grid, 2 to 3 repeats of 5 steps, the first untimed
    tried = words_of(KINDS["ddp"]).tried([DDPOptions(bucket_cap_mb=cap) for cap in DDP_BUCKET_GRID_MB])
    plan = ("tune tu", SCRIPT, "2 cpu", tried, (2, 3), (STEPS, 1, STEPS), "script-own", refined(MAX_ROUNDS))
    assert progress_words.script_sweep_plan(*plan) in lines, result.stderr
    # 25 and 100 build 5's one bucket: measured once; the refinement, if any, adds caps of other layouts
    twins = [(label, "bucket-5mb", describe(ONE)) for label in ("bucket-25mb", "bucket-100mb")]
    first_round = progress_words.one_per_layout("tune tu", ["script-own", "bucket-1mb", "bucket-5mb"], twins)
    assert first_round in lines, result.stderr
    record = SweepRecord.read(tmp_path / "traces" / "tu")
    # the line that counts what was measured names the report's rows (in the order measured; the rows are sized)
    measured = progress_words.counted([setting_label(s) for s in record.plan.settings])
    assert any(line.startswith(f"tune tu: {measured} measured") for line in lines), result.stderr
    assert sorted(setting_label(s) for s in record.plan.settings) == sorted(rows)
    assert rows[0] == "script-own" and {"bucket-1mb", "bucket-5mb"} <= set(rows) and len(rows) <= 5
    assert len({tuple(s.bucket_sizes) for s in sweep.settings}) == len(rows)  # one setting per layout
    assert sweep.baseline == "script-own" and sweep.settings[0].bucket_sizes == OWN
    assert record.order[:3] == ["script-own", "bucket-1mb", "bucket-5mb"] and record.built_by == "script"
    assert [setting_label(s) for s in record.plan.settings] == list(record.settings)  # every one measured
    launched = launches_of(tmp_path / "traces" / "tu")
    assert len(launched) == record.timings["launches"]
    for name, run in launched.items():  # the script as written, then each cap applied on top of it
        assert run["steps_completed"] == STEPS and [len(r["step_ms"]) for r in run["ranks"]] == [STEPS] * 2, name
        (built,) = built_of(run, "ddp")
        assert built["asked"]["bucket_cap_mb"] is None, name  # the script passes no cap
        expected = {} if name.startswith("script-own") else {"bucket_cap_mb": float(name.split("-")[1][:-2])}
        assert built["applied"] == expected, name
    by_label = {s.label: s for s in sweep.settings}
    # every timed launch's steps after its warm-up: 2 repeats, a third while a setting is undecided
    for label in record.order[:3]:
        assert by_label[label].samples == (STEPS - 1) * by_label[label].launches and 2 <= by_label[label].launches
    assert by_label["script-own"].launches == max(s.launches for s in sweep.settings)  # the baseline pairs with all
    assert by_label["bucket-1mb"].bucket_sizes == CAP_1 and by_label["script-own"].options["bucket_cap_mb"] is None
    recommendation = sweep.recommendation.lower()
    assert "the script's own setting" in recommendation and "the default" not in recommendation


@pytest.mark.takes(36, "the script's run, then advise's launches of each setting and its confirming pairs")
def test_advise_of_a_script_run_reruns_it_as_written(tmp_path):
    """A run of the script as written, given one finding (bucket_cap_mb=25): advise measures the script's own
    setting against an explicit 25, which builds other buckets; every launch runs --max-steps."""
    result = commprof_here(
        "run", "--run-id", "r", "--max-steps", "12", "--schedule", "3,1,4", "--quiet", "--", SCRIPT, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    plant_findings(tmp_path / "reports" / "r", planted_finding("bucket_cap", "bucket_cap_mb=25", {"bucket_cap_mb": 25}))
    result = commprof_here("advise", "r", *ROUNDS, "--max-steps", str(STEPS), "--quiet", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    sweep = load_report(tmp_path / "reports" / "r-advise").sweep
    assert [(s.label, s.bucket_sizes) for s in sweep.settings] == [("script-own", OWN), ("bucket-25mb", ONE)]
    assert sweep.settings[1].predicted_gain_ms is not None and sweep.settings[1].predicted_gain_ms.value == 2.0
    launched = launches_of(tmp_path / "traces" / "r-advise")
    record = SweepRecord.read(tmp_path / "traces" / "r-advise")
    # 2 to 3 interleaved pairs, a profiled launch each, and any fresh pairs that confirm a claim
    assert len(launched) == record.timings["launches"] >= 6
    assert all(run["steps_completed"] == STEPS for run in launched.values())
    assert {built_of(run, "ddp")[0]["applied"].get("bucket_cap_mb") for name, run in launched.items()} == {None, 25.0}
