"""The commands matrix of issue 53 (benchmarks/check/commands_matrix.py): every command that takes a job on every kind
of job ends in its result (exit 0) or one error line (exit 2), never a traceback. The whole matrix is a check of its
own (about 13 minutes, docs/reliability.md); here, that its grid is whole (fast), and a sample of its cells run for
real (slow): every command on commprof's own DDP model."""

from pathlib import Path

import pytest
import typer.main

from benchmarks.check.commands_matrix import COMMANDS, KIND_NAMES, KINDS, WRITES, Matrix, cells, classify, run_to_advise
from commprof.cli.app import app

# the commands that take no job: analyze reads traces, diagnose a hung job's dumps, bench and backends time the
# collectives alone
NOT_A_JOB = {"analyze", "diagnose", "bench", "backends"}


def test_the_matrix_has_a_cell_for_every_command_on_every_kind():
    grid = [(c.command, c.kind.name) for c in cells()]
    assert sorted(grid) == sorted((command, kind) for command in COMMANDS for kind in KIND_NAMES)
    assert len(set(KIND_NAMES)) == len(KINDS)


def test_every_command_that_takes_a_job_is_a_column():
    """A new command is in the matrix, or named here as one that takes no job."""
    assert set(typer.main.get_command(app).commands) - NOT_A_JOB == set(COMMANDS)


def test_the_kinds_are_the_jobs_of_issue_53():
    """commprof's own model with DDP and FSDP; DDP, FSDP, ZeRO 1-3 and torch.compile in a script; Hugging Face
    Trainer, Lightning and Horovod scripts. Each script is in the repository, each package a kind needs is named."""
    builtin = {k.options for k in KINDS if not k.script}
    assert builtin == {(), ("--strategy", "fsdp")}
    scripts = [k.script[0].rsplit("/", 1)[-1] for k in KINDS if k.script]
    for name in ("train_default_ddp.py", "train_fsdp.py", "train_compiled.py", "train_hf_trainer.py"):
        assert name in scripts
    assert "train_lightning.py" in scripts and "train_horovod.py" in scripts
    stages = sorted(k.script[k.script.index("--stage") + 1] for k in KINDS if "--stage" in k.script)
    assert stages == ["1", "2", "3"]
    for kind in KINDS:
        if kind.script:
            assert Path(kind.script[0]).is_file(), kind.script[0]
    needs = {k.name: k.needs for k in KINDS if k.needs}
    assert needs == {
        "zero1": "deepspeed",
        "zero2": "deepspeed",
        "zero3": "deepspeed",
        "hf-trainer": "transformers",
        "lightning": "lightning",
        "horovod": "horovod",
    }


def test_the_kinds_have_one_or_two_models():
    """Issue 63's axis: scripts with two models, two DDPs (a GAN) and two FSDP roots (a teacher and a student); issue
    69's: two models of two kinds (an FSDP encoder and a DDP head)."""
    two = {k.script[0].rsplit("/", 1)[-1] for k in KINDS if k.models == 2}
    assert two == {"train_gan.py", "train_fsdp_two.py", "train_fsdp_ddp.py"}
    assert {k.models for k in KINDS} == {1, 2}


@pytest.mark.parametrize("made", cells() + [run_to_advise(k) for k in KINDS], ids=lambda c: c.name)
def test_every_cell_parses_as_its_command_line(made):
    """Each cell's options are its command's (a renamed option fails here, not an hour into the check)."""
    command = typer.main.get_command(app).commands[made.command]
    command.make_context(made.command, list(made.args[1:]))
    if made.command in WRITES:
        assert made.report == WRITES[made.command]
        assert "--run-id" in made.args


@pytest.mark.parametrize(
    ("code", "err", "status"),
    [
        (0, "commprof: rank 0 done: 8/8 steps\n", "result"),
        (2, "error: --strategy fsdp is not for commprof tune, which runs DDP\n", "refused"),
        (2, "commprof: starting ranks\ncommprof: rank 0 done\nerror: the script trains with DeepSpeed\n", "refused"),
        (2, "error: one\nerror: two\n", "FAIL"),
        (2, "error: one\nand a line after it\n", "FAIL"),
        (2, "Usage: commprof run\n", "FAIL"),
        (1, "error: rank 1 failed: ValueError: x\n", "FAIL"),
        (2, "Traceback (most recent call last):\nerror: x\n", "FAIL"),
        (
            1,
            "Traceback (most recent call last):\nValueError: x\nerror: rank 0 on vm raised the error above\n",
            "script error",
        ),
        (1, "Traceback (most recent call last):\nerror: commprof failed: KeyError: 'x' (a bug in commprof)\n", "FAIL"),
        (0, "[rank0]: Traceback (most recent call last):\n", "FAIL"),
    ],
)
def test_the_outcome_rules(code, err, status):
    assert classify(code, "", err, None)[0] == status


def test_a_result_that_writes_a_report_has_written_it(tmp_path):
    assert classify(0, "", "", tmp_path / "reports" / "m" / "report.json") == ("FAIL", "exit 0 without m/report.json")


# the commands that launch many times have end-to-end tests of their own: sweep on this model (test_sweep_e2e), tune
# and advise on a script (test_script_baseline_runs), compare (test_compare), scale (test_scale_e2e)
COVERED_ELSEWHERE = {"sweep", "tune", "advise", "compare", "scale"}


def sample():
    """Every command on commprof's own DDP model but those covered by tests of their own; the other kinds' runs, sweeps
    and tunes have tests of their own (test_deepspeed, test_compiled_run, test_script_runs, test_horovod), and the
    whole matrix is its own check (about 13 minutes, docs/reliability.md)."""
    return [c for c in cells(kinds=["builtin-ddp"]) if c.name.split()[-1] not in COVERED_ELSEWHERE]


@pytest.mark.slow
def test_a_sample_of_the_matrix_ends_in_results_or_one_line_refusals(tmp_path):
    matrix = Matrix(tmp_path)
    failed, outcomes = [], []
    for made in sample():
        outcome = matrix.outcome(made)
        outcomes.append(f"{made.name}: {outcome.shown()}")
        if outcome.status == "FAIL":
            tail = "\n".join(outcome.output.splitlines()[-30:])
            failed.append(f"{made.name} ({made.command_line()}): {outcome.detail}\n{tail}")
    assert not failed, "\n\n".join(failed)
    results = [o for o in outcomes if ": result" in o]
    assert any(o.startswith("builtin-ddp run:") for o in results), outcomes
