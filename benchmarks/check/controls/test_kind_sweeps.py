"""A built-in sweep on other kinds and options than DDP's defaults (issue 71, item 3: the commands x kinds matrix
runs on demand): FSDP's knobs in one launch, a model with an unused parameter swept with --find-unused-parameters,
and settings that do not fit alive at once rebuilt each turn (--max-live-settings). On demand:

    python -m pytest benchmarks/check/controls/test_kind_sweeps.py -p no:cacheprovider"""

import pytest

from commprof.analysis.analyze import analyze
from commprof.results.store import load_report
from commprof.results.sweep_record import SweepRecord
from commprof.trace.load import load_run
from tests.conftest import commprof
from tests.test_sweep_e2e import SMALL_SWEEP
from tests.test_unused_parameters import MODEL

pytestmark = pytest.mark.slow


def test_fsdp_knobs_swept_in_one_launch(tmp_path):
    """FSDP2 on mlp-small's 9 linear layers: resharding after forward costs a second all-gather of every layer in
    backward, and the reduce dtype reaches the reduce-scatter."""
    result = commprof(
        "sweep",
        "--strategy",
        "fsdp",
        "--forward-prefetch",
        "0",
        "--reduce-dtype",
        "fp32,bf16",
        "--run-id",
        "fs",
        *SMALL_SWEEP,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    record = SweepRecord.read(tmp_path / "traces" / "fs")
    labels = ["no-reshard", "no-reshard_reduce-bf16", "reshard", "reshard_reduce-bf16"]
    assert sorted(record.settings) == labels and record.order[:4] == record.order[4:]  # A B C D A B C D
    report = load_report(tmp_path / "reports" / "fs" / "report.json")
    sweep = report.sweep
    assert sweep.strategy == "fsdp" and sweep.baseline == "reshard"
    assert sorted(s.label for s in sweep.settings) == labels
    for s in sweep.settings:
        assert s.gathers_per_step == (18 if s.options["reshard_after_forward"] else 9)
        assert s.buckets == 0 and s.timeline == [] and s.ddp_check is None
    for label, dtype in (("reshard", "float"), ("reshard_reduce-bf16", "c10::BFloat16")):
        setting = analyze(load_run([tmp_path / "traces" / "fs" / label], workers=1), name=label, kind="run")
        reduced = [c for c in setting.collectives if c.purpose == "gradient reduce-scatter"]
        assert reduced and {c.dtype for c in reduced} == {dtype}
    markdown = (tmp_path / "reports" / "fs" / "report.md").read_text()
    assert "| setting | step ms | 95% CI | speedup | launches | exposed | overlap | gathers/step |" in markdown
    assert "Buckets DDP built" not in markdown and not (tmp_path / "reports" / "fs" / "buckets.png").exists()


def test_sweep_keeps_find_unused_parameters(tmp_path):
    result = commprof(
        "sweep",
        "--bucket-cap-mb",
        "5,25",
        "--model",
        MODEL,
        "--find-unused-parameters",
        "--repeats",
        "2",
        "--steps-per-repeat",
        "1",
        "--warmup-steps",
        "1",
        "--profile-steps",
        "1",
        "--batch-size",
        "8",
        "--run-id",
        "sw",
        "--quiet",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "reports" / "sw" / "report.json").exists()


def test_settings_that_do_not_fit_are_rebuilt_each_turn(tmp_path):
    """--max-live-settings 1: one setting's model, DDP and optimizer alive at a time (counted), every turn
    interleaved as usual, and the same report."""
    result = commprof(
        "sweep", "--bucket-cap-mb", "1,5,25", "--run-id", "one", "--max-live-settings", "1", *SMALL_SWEEP, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    record = SweepRecord.read(tmp_path / "traces" / "one")
    assert record.timings["most_live_settings"] == 1
    assert record.order == ["bucket-1mb", "bucket-5mb", "bucket-25mb"] * 2  # still A B C A B C
    sweep = load_report(tmp_path / "reports" / "one" / "report.json").sweep
    # 2 timed steps in each launch of every setting
    assert [s.samples for s in sweep.settings] == [2 * s.launches for s in sweep.settings]
    assert all(s.timeline for s in sweep.settings)
