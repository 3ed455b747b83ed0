"""Scripts of the frameworks and layouts the suite does not launch each time (issue 71, item 3: the commands x kinds
matrix runs on demand, benchmarks/check/commands_matrix.py): Lightning, Hugging Face's Trainer, a script on two
emulated nodes, FSDP's knobs on a script's own fully_shard. On demand:

    python -m pytest benchmarks/check/controls/test_frameworks.py -p no:cacheprovider"""

import pytest

from benchmarks.check.controls.test_launch_controls import two_nodes
from commprof.results.job import BuiltFSDP
from commprof.results.store import load_report
from tests.conftest import built_of, commprof
from tests.test_script_runs import SCRIPTS, SHORT_SCHEDULE, TINY_SCHEDULE, run_json

pytestmark = pytest.mark.slow


def test_a_lightning_script(tmp_path):
    pytest.importorskip("lightning", reason="Lightning is not installed (the `frameworks` extra)")
    result = commprof(
        "run",
        "--run-id",
        "l",
        "--max-steps",
        "8",
        *SHORT_SCHEDULE,
        "--bucket-cap-mb",
        "0.01",
        "--quiet",
        "--",
        str(SCRIPTS / "train_lightning.py"),
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    run = run_json(tmp_path, "l")
    (built,) = built_of(run, "ddp")
    assert (built["built_by"], built["module"], built["parameters"]) == ("lightning", "Classifier", 38_410)
    assert [len(r["step_ms"]) for r in run["ranks"]] == [8, 8]
    gradients = sorted(c.bytes for c in load_report(tmp_path / "reports" / "l").collectives if c.bytes > 1024)
    assert gradients == [20520, 133120]  # both linear layers' gradients in 0.01 MB buckets


def test_a_hugging_face_trainer_script_with_its_own_cap_and_with_ours(tmp_path):
    """Trainer builds the DDP with the script's ddp_bucket_cap_mb=1: kept as written, or replaced by
    --bucket-cap-mb, as a sweep's settings replace it."""
    pytest.importorskip("transformers", reason="Hugging Face transformers is not installed (the `frameworks` extra)")
    script = str(SCRIPTS / "train_hf_trainer.py")
    for run_id, cap in (("h", []), ("hc", ["--bucket-cap-mb", "0.01"])):
        args = ["--max-steps", "8", *SHORT_SCHEDULE, *cap, "--quiet", "--", script]
        result = commprof("run", "--run-id", run_id, *args, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
    (built,) = built_of(run_json(tmp_path, "h"), "ddp")
    assert built["built_by"] == "transformers" and built["asked"]["bucket_cap_mb"] == 1 and built["applied"] == {}
    assert [c.bytes for c in load_report(tmp_path / "reports" / "h").collectives if c.bytes > 1024] == [153640]
    (built,) = built_of(run_json(tmp_path, "hc"), "ddp")
    assert built["asked"]["bucket_cap_mb"] == 1 and built["applied"] == {"bucket_cap_mb": 0.01}
    gradients = sorted(c.bytes for c in load_report(tmp_path / "reports" / "hc").collectives if c.bytes > 1024)
    assert gradients == [22528, 131072]  # 0.01 MB buckets: the first layer's weight alone, the other three together


def test_a_script_on_two_emulated_nodes(tmp_path):
    script = ("--max-steps", "6", *TINY_SCHEDULE, "--quiet", "--", str(SCRIPTS / "train_epochs.py"), "--epochs", "50")
    two_nodes([tmp_path, tmp_path], 1, "--run-id", "two", *script)
    run = run_json(tmp_path, "two")
    assert run["world_size"] == 2 and [len(r["step_ms"]) for r in run["ranks"]] == [6, 6]
    assert len(run["link_probe"]) == 3, run["notes"]  # both nodes' ranks met in commprof's own group
    assert [r.rank for r in load_report(tmp_path / "reports" / "two").ranks] == [0, 1]


def test_fsdps_knobs_are_set_on_a_scripts_own_fully_shard(tmp_path):
    """Issue 63: --strategy fsdp sets FSDP's options on the script's own fully_shard calls: without resharding after
    forward, the backward gathers nothing again."""
    args = ("--quiet", "--schedule", "1,1,3", "--", str(SCRIPTS / "train_fsdp.py"))
    result = commprof(
        "run", "--run-id", "kept", "--strategy", "fsdp", "--no-reshard-after-forward", *args, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    report = load_report(tmp_path / "reports" / "kept")
    assert report.run is not None
    (built,) = report.run.job.of(BuiltFSDP)
    assert (built.module, built.name, built.parameters) == ("Sequential", "model", 265_738)
    assert built.units == ["Sequential"] * 5 and built.unit_parameters == [65_792] * 4 + [2_570]
    assert built.applied == {"reshard_after_forward": False}
    assert built.asked == {"reshard_after_forward": None, "reduce_dtype": "fp32"}
    assert {(c.phase, c.purpose) for c in report.collectives} == {
        ("forward", "parameter all-gather"),
        ("backward", "gradient reduce-scatter"),
    }
    assert report.run.settings(with_defaults=False)["reshard_after_forward"] == "False (commprof's)"
