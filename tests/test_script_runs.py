"""`commprof run -- train.py args`: the user's own scripts, unmodified, on 2 real Gloo ranks. Each is checked
as built-in runs are: compute + exposed + idle = step, the buckets in the trace follow --bucket-cap-mb, every
rank stops at the same step under --max-steps."""

import json
import re

import pytest

from commprof.results.job import BuiltFSDP
from commprof.results.store import load_report
from tests.conftest import REPO, built_of, commprof, load_json

SCRIPTS = REPO / "tests" / "data" / "scripts"
pytestmark = pytest.mark.slow
# a profiler window of a few steps, early: what these tests check needs no more, and each profiled step costs time
SHORT_SCHEDULE = ["--schedule", "2,1,4"]
TINY_SCHEDULE = ["--schedule", "1,1,2"]


def run_json(cwd, run_id):
    return json.loads((cwd / "traces" / run_id / "run.json").read_text())


def test_a_script_unmodified_with_max_steps_and_a_bucket_override(capped_script_run):
    cwd, result = capped_script_run  # train_epochs.py --epochs 50, --max-steps 8 --bucket-cap-mb 0.01
    assert result.stderr.splitlines()[0].endswith("on 2 cpu rank(s), gloo; its DDP gets bucket_cap_mb=0.01")
    run = run_json(cwd, "s")
    assert run["status"] == "complete" and [len(r["step_ms"]) for r in run["ranks"]] == [8, 8]
    assert run["model"] == "Sequential" and run["parameters"] == 301_066
    (built,) = built_of(run, "ddp")
    assert built["asked"]["bucket_cap_mb"] == 1 and built["applied"] == {"bucket_cap_mb": 0.01}
    report = load_report(cwd / "reports" / "s")
    # the script asked for 1 MB buckets (two all-reduces); 0.01 MB splits them into three
    assert sorted(c.bytes for c in report.collectives) == [20520, 133120, 1050624]
    for rank in report.ranks:
        assert rank.compute_ms + rank.exposed_comm_ms + rank.idle_ms == pytest.approx(rank.step_time_ms.mean)
    assert not (cwd / "checkpoint.pt").exists()  # ended at step 8, before its own end


def test_a_script_runs_to_its_own_end_with_its_own_buckets(tmp_path):
    """Past the profiler's window to its own end: its own argv and working directory, its own buckets, and the
    progress in a log ends on the steps it ran (before: '151/151' for its own 160)."""
    result = commprof(
        "run",
        "--run-id",
        "e",
        *SHORT_SCHEDULE,
        "--",
        str(SCRIPTS / "train_epochs.py"),
        "--epochs",
        "2",
        "--checkpoint",
        "mine.pt",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "mine.pt").exists()  # its own argv, its own working directory, rank 0's checkpoint
    assert [len(r["step_ms"]) for r in run_json(tmp_path, "e")["ranks"]] == [32, 32]  # 2 epochs x 16 batches
    assert sorted(c.bytes for c in load_report(tmp_path / "reports" / "e").collectives) == [133120, 1071144]
    lines = [line for line in result.stderr.splitlines() if line.startswith("commprof: ")]
    assert "\x1b" not in result.stderr and lines[0] == "commprof: starting ranks", result.stderr
    assert re.fullmatch(r"commprof: rank 0 done: 32/32 steps in \d:\d\d:\d\d", lines[-1]), lines
    # the script's own lines, on the streams it wrote them to, each with its rank, as torchrun --tee shows them
    for rank in (0, 1):
        assert [line for line in result.stderr.splitlines() if line.startswith(f"[rank{rank}]: ")] == [
            f"[rank{rank}]: epoch 1 of 2 done",
            f"[rank{rank}]: epoch 2 of 2 done",
        ], result.stderr
    assert "[rank0]: saved mine.pt after 2 epochs, RANK=0\n" in result.stdout and "[rank1]" not in result.stdout
    assert "script output: traces/e/logs/ (each rank's stdout.log and stderr.log)" in result.stdout


def test_optimizer_steps_are_steps_under_accumulation_and_a_grad_scaler(tmp_path):
    result = commprof(
        "run",
        "--run-id",
        "a",
        "--max-steps",
        "8",
        *SHORT_SCHEDULE,
        "--quiet",
        "--",
        str(SCRIPTS / "train_accumulate_amp.py"),
        "--accumulate",
        "4",
        cwd=tmp_path,
    )
    assert result.returncode == 0 and result.stderr == "", result.stderr  # --quiet: not a line, not a warning
    assert run_json(tmp_path, "a")["steps_completed"] == 8
    (call,) = load_report(tmp_path / "reports" / "a").collectives
    assert call.calls_per_step == 1.0  # one bucket all-reduced per optimizer step, none in the no_sync micro-batches


def test_a_module_started_with_dash_m(tmp_path):
    """A package started as `python -m mypkg` runs: its __main__, as a module of the package (a relative import),
    imports a module that has one of its own."""
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "__init__.py").write_text("")
    (tmp_path / "mypkg" / "settings.py").write_text("EPOCHS_FLAG = '--epochs'\n")
    code = (SCRIPTS / "train_epochs.py").read_text()
    (tmp_path / "mypkg" / "train.py").write_text("from .settings import EPOCHS_FLAG  # noqa: F401\n" + code)
    (tmp_path / "mypkg" / "__main__.py").write_text("from .train import main\nmain()\n")
    args = ["--max-steps", "4", *TINY_SCHEDULE, "--quiet", "--", "-m", "mypkg", "--epochs", "9"]
    result = commprof("run", "--run-id", "m", *args, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "reports" / "m" / "report.html").exists()
    assert [len(r["step_ms"]) for r in run_json(tmp_path, "m")["ranks"]] == [4, 4]


def test_sweep_of_a_script_too_short_says_so(tmp_path):
    result = commprof(
        "sweep",
        "--bucket-cap-mb",
        "1",
        "--repeats",
        "2",
        "--steps-per-repeat",
        "40",
        "--quiet",
        "--",
        str(SCRIPTS / "train_epochs.py"),
        "--epochs",
        "1",
        cwd=tmp_path,
    )
    assert result.returncode == 2
    assert "ended after 16 optimizer steps; a sweep needs 43 per launch" in result.stderr.strip().splitlines()[-1]


def test_a_script_without_ddp_is_measured_and_told_the_options_did_nothing(tmp_path):
    result = commprof(
        "run",
        "--run-id",
        "n",
        "--max-steps",
        "8",
        *SHORT_SCHEDULE,
        "--bucket-cap-mb",
        "5",
        "--quiet",
        "--",
        str(SCRIPTS / "no_ddp.py"),
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    report = load_report(tmp_path / "reports" / "n")
    assert report.ranks[0].comm_ms > 0  # its own all-reduces are communication all the same
    assert report.run.script_notes.no_ddp and report.run.script_notes.ddp_given


def test_a_script_that_never_steps_is_one_window(tmp_path):
    result = commprof("run", "--run-id", "ns", "--quiet", "--", str(SCRIPTS / "never_steps.py"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    report = load_report(tmp_path / "reports" / "ns")
    assert {s.step for s in report.steps} == {"all"} and all(r.comm_ms > 0 for r in report.ranks)
    assert not report.run.script_notes.stepped


def test_a_script_that_shards_its_model_with_fsdp(tmp_path):
    result = commprof(
        "run",
        "--run-id",
        "fsdp",
        "--quiet",
        "--wait",
        "1",
        "--warmup",
        "1",
        "--active",
        "3",
        "--",
        str(SCRIPTS / "train_fsdp.py"),
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    report = load_report(tmp_path / "reports" / "fsdp")
    assert {(c.phase, c.purpose) for c in report.collectives} == {
        ("forward", "parameter all-gather"),
        ("backward", "parameter all-gather"),
        ("backward", "gradient reduce-scatter"),
    }
    # the four blocks' reduce-scatters, one per block per step (the root's holds the head)
    (blocks,) = [c for c in report.collectives if c.purpose == "gradient reduce-scatter" and c.calls_per_step == 4]
    assert blocks.op == "all_reduce"  # Gloo's reduce-scatter is an all-reduce; its purpose says what it is
    assert all(f.kind not in ("bucket_cap", "compression") for f in report.findings)  # no DDP here to tune
    assert report.run is not None and [b.units for b in report.run.job.of(BuiltFSDP)] == [["Sequential"] * 5]


def test_a_script_with_two_ddp_models_has_each_in_its_report(tmp_path):
    """Issue 63: a GAN's generator (cap 4) and discriminator (cap 1), each named, its own cap and all-reduces: the
    discriminator's one bucket is all-reduced twice a step (its backward runs in both of the GAN's passes)."""
    script = (str(SCRIPTS / "train_gan.py"), "--steps", "12")
    result = commprof("run", "--run-id", "gan", "--quiet", "--schedule", "2,1,4", "--", *script, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    report = load_report(tmp_path / "reports" / "gan")
    generator, discriminator = report.models
    assert (generator.name, generator.parameters, generator.bucket_cap_mb) == ("generator", 427_264, 4.0)
    assert (discriminator.name, discriminator.parameters, discriminator.bucket_cap_mb) == (
        "discriminator",
        132_097,
        1.0,
    )
    assert (generator.calls_per_step, discriminator.calls_per_step) == (1.0, 2.0)
    assert generator.buckets == [427_264 * 4] and discriminator.buckets == [132_097 * 4]
    notes = report.run.script_notes
    assert (notes.counted, notes.others) == ("discriminator's Adam", ["generator's Adam"])
    text = (tmp_path / "reports" / "gan" / "report.md").read_text()
    assert "2 DDP models, generator (Sequential, 427,264 parameters) and discriminator" in text
    assert "discriminator.bucket_cap_mb=1" in text


def test_a_script_that_destroys_its_process_group_gets_the_same_measurements(tmp_path):
    """Issue 53: a script that ends with dist.destroy_process_group() (most do) got no link probe and no casts' cost,
    where the same script stopped by --max-steps before that call got both. Now both are taken as it destroys it."""
    script = str(SCRIPTS / "train_default_ddp.py")
    args = ("--quiet", "--schedule", "2,1,4", "--", script, "--epochs", "1", "--steps-per-epoch", "12")
    result = commprof("run", "--run-id", "ends", *args, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    run = load_json(tmp_path / "traces" / "ends" / "run.json")
    assert run["steps_completed"] == 12  # it ran to its own end, its destroy_process_group() included
    assert len(run["link_probe"]) >= 2 and run["cast_costs"], "no link probe or casts' cost"
    report = (tmp_path / "reports" / "ends" / "report.md").read_text()
    assert "this launch did not probe its links" not in report and "within a host" in report
