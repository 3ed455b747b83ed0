"""Every bad input: one line on stderr, exit code 2, nothing launched."""

import pytest

from commprof.cli.app import main


def run_main(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    captured = capsys.readouterr()
    return exit_info.value.code, captured.err.strip()


@pytest.mark.parametrize("argv, message", [
    (["run", "--bogus"], "No such option: --bogus"),
    (["run", "--steps", "abc"], "--steps"),
    (["run", "--gpus", "8"], "--gpus 8: CUDA is not available"),
    (["run", "--backend", "nccl"], "--backend nccl needs CUDA"),
    (["run", "--model", "resnet9000"], "unknown model 'resnet9000'"),
    (["run", "--model", "missing_file.py:build"], "file missing_file.py not found"),
    (["run", "--bucket-cap-mb", "0"], "--bucket-cap-mb must be > 0"),
    (["run", "--steps", "5"], "smaller than the profiler schedule"),
    (["run", "--schedule", "1,2"], "WAIT,WARMUP,ACTIVE"),
    (["run", "--precision", "fp8"], "--precision"),
    (["analyze", "does/not/exist"], "no such file or folder"),
    (["report", "nope.json"], "cannot read"),
    (["report", "x.json", "--format", "pdf"], "--format must be one of"),
])
def test_bad_input_is_one_line_exit_2(tmp_path, monkeypatch, capsys, argv, message):
    monkeypatch.chdir(tmp_path)
    code, err = run_main(argv, capsys)
    assert code == 2
    assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err


def test_existing_run_id(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "traces" / "mine").mkdir(parents=True)
    code, err = run_main(["run", "--run-id", "mine"], capsys)
    assert code == 2 and "already exists" in err


def test_reports_dir_is_a_file(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "reports").write_text("")
    code, err = run_main(["run"], capsys)
    assert code == 2 and "reports exists and is not a folder" in err


def test_help_explains_every_option(capsys):
    code, _ = run_main(["run", "--help"], capsys)
    assert code == 0


def test_static_graph_with_accumulation_is_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code, err = run_main(["run", "--static-graph", "--grad-accum", "2"], capsys)
    assert code == 2 and "pytorch/pytorch#143580" in err
