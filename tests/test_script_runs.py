"""`commprof run -- train.py args`: the user's own scripts, unmodified, on 2 real Gloo ranks. Each is checked
as built-in runs are: compute + exposed + idle = step, the buckets in the trace follow --bucket-cap-mb, every
rank stops at the same step under --max-steps."""

import json

import pytest

from commprof.cli.progress_lines import PREFIX
from commprof.launch.script_output import the_scripts
from commprof.render import progress_words
from commprof.render.models_view import models_named
from commprof.results.job import BuiltFSDP
from commprof.results.store import load_report
from tests.conftest import REPO, built_of, commprof_here, load_json

SCRIPTS = REPO / "tests" / "data" / "scripts"
pytestmark = pytest.mark.slow
# a profiler window of a few steps, early: what these tests check needs no more, and each profiled step costs time
SHORT_SCHEDULE = ["--schedule", "2,1,4"]
TINY_SCHEDULE = ["--schedule", "1,1,2"]


def run_json(cwd, run_id):
    return json.loads((cwd / "traces" / run_id / "run.json").read_text())


def took_s(line: str) -> int:
    """The time a launch's last line gives (its last word, h:mm:ss), in seconds."""
    hours, minutes, seconds = map(int, line.rsplit(" ", 1)[1].split(":"))
    return 3600 * hours + 60 * minutes + seconds


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
    result = commprof_here(
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
    lines = [line for line in result.stderr.splitlines() if line.startswith(PREFIX)]
    assert "\x1b" not in result.stderr and lines[0] == PREFIX + progress_words.starting(), result.stderr
    assert lines[-1] == PREFIX + progress_words.launch_ended(took_s(lines[-1]), False, 0, 32, 32), lines
    # the script's own lines, on the streams it wrote them to, each with its rank, as torchrun --tee shows them: what
    # each rank wrote to its log but the profiler's markers (launch/script_output)
    own = {}
    for rank in (0, 1):
        for stream, shown in (("stdout", result.stdout), ("stderr", result.stderr)):
            (log,) = (tmp_path / "traces" / "e" / "logs").glob(f"*/*/attempt_*/{rank}/{stream}.log")
            own[rank, stream] = [line for line in log.read_text().splitlines() if the_scripts(line)]
            prefix = f"[rank{rank}]: "
            assert [line for line in shown.splitlines() if line.startswith(prefix)] == [
                prefix + line for line in own[rank, stream]
            ], shown
    # a line per epoch on stderr from each rank; rank 0 alone says on stdout that it saved its checkpoint
    assert {key: len(written) for key, written in own.items()} == {
        (0, "stdout"): 1,
        (0, "stderr"): 2,
        (1, "stdout"): 0,
        (1, "stderr"): 2,
    }
    assert "script output: traces/e/logs/ (each rank's stdout.log and stderr.log)" in result.stdout


def test_optimizer_steps_are_steps_under_accumulation_and_a_grad_scaler(tmp_path):
    result = commprof_here(
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
    result = commprof_here("run", "--run-id", "m", *args, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "reports" / "m" / "report.html").exists()
    assert [len(r["step_ms"]) for r in run_json(tmp_path, "m")["ranks"]] == [4, 4]


def test_sweep_of_a_script_too_short_says_so(tmp_path):
    result = commprof_here(
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
    result = commprof_here(
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
    result = commprof_here("run", "--run-id", "ns", "--quiet", "--", str(SCRIPTS / "never_steps.py"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    report = load_report(tmp_path / "reports" / "ns")
    assert {s.step for s in report.steps} == {"all"} and all(r.comm_ms > 0 for r in report.ranks)
    assert not report.run.script_notes.stepped


def test_a_script_that_shards_its_model_with_fsdp(tmp_path):
    result = commprof_here(
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
    result = commprof_here("run", "--run-id", "gan", "--quiet", "--schedule", "2,1,4", "--", *script, cwd=tmp_path)
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
    assert [(m.kind, m.module) for m in report.models] == [("DDP", "Sequential")] * 2
    text = (tmp_path / "reports" / "gan" / "report.md").read_text()
    assert models_named(report) in text  # the header names both
    assert "discriminator.bucket_cap_mb=1" in text


def test_a_script_that_destroys_its_process_group_gets_the_same_measurements(tmp_path):
    """Issue 53: a script that ends with dist.destroy_process_group() (most do) got no link probe and no casts' cost,
    where the same script stopped by --max-steps before that call got both. Now both are taken as it destroys it."""
    script = str(SCRIPTS / "train_default_ddp.py")
    args = ("--quiet", "--schedule", "2,1,4", "--", script, "--epochs", "1", "--steps-per-epoch", "12")
    result = commprof_here("run", "--run-id", "ends", *args, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    run = load_json(tmp_path / "traces" / "ends" / "run.json")
    assert run["steps_completed"] == 12  # it ran to its own end, its destroy_process_group() included
    assert len(run["link_probe"]) >= 2 and run["cast_costs"], (run["link_probe"], run["cast_costs"])
    network = load_report(tmp_path / "reports" / "ends").network
    assert network is not None and [t.tier for t in network.tiers] == ["host"]  # its report has the link it probed
