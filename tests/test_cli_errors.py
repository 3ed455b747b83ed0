"""Every bad input: one line on stderr, exit code 2, nothing launched."""

from pathlib import Path

import pytest
from bad_inputs import CASES, make_sandbox, markdown_table, run_case

from commprof.cli.app import main


def run_main(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    captured = capsys.readouterr()
    return exit_info.value.code, captured.err.strip()


@pytest.mark.parametrize("argv, message", CASES, ids=[" ".join(argv) for argv, _ in CASES])
def test_bad_input_is_one_line_exit_2(tmp_path, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "200")
    make_sandbox(tmp_path)
    code, err = run_case(argv)
    assert code == 2, err
    assert err.startswith("error: ") and message in err and len(err.splitlines()) == 1, err


def test_the_table_in_the_docs_is_what_the_commands_print(monkeypatch):
    """docs/reliability.md's table of bad inputs is `python tests/bad_inputs.py`, not an older version of it."""
    monkeypatch.setenv("COLUMNS", "200")
    docs = (Path(__file__).parent.parent / "docs" / "reliability.md").read_text()
    assert markdown_table() in docs, "regenerate it: python tests/bad_inputs.py"


def test_existing_run_id(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "traces" / "mine").mkdir(parents=True)
    code, err = run_main(["run", "--run-id", "mine"], capsys)
    assert code == 2 and "already exists" in err


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="no /proc file system here")
@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["run", "--traces-dir", "/proc"],
            "/proc: cannot write there (/proc takes no new files: a virtual file system)",
        ),
        (
            ["run", "--reports-dir", "/proc/new/reports"],
            "/proc/new/reports: cannot write there (/proc takes no new files: a virtual file system)",
        ),
        (
            ["analyze", "trace.json", "--reports-dir", "/proc"],
            "/proc: cannot write there (/proc takes no new files: a virtual file system)",
        ),
    ],
)
def test_a_folder_that_takes_no_files_is_named_as_such(tmp_path, monkeypatch, capsys, argv, message):
    """Creating a file in /proc fails with 'No such file or directory' about a folder that is there: not the
    reason to show."""
    monkeypatch.chdir(tmp_path)
    make_sandbox(tmp_path)
    code, err = run_main(argv, capsys)
    assert (code, err) == (2, f"error: {message}")


def test_reports_dir_is_a_file(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "reports").write_text("")
    code, err = run_main(["run"], capsys)
    assert code == 2 and "reports exists and is not a folder" in err


@pytest.mark.parametrize(
    "command, stated",
    [
        (
            ["run", "--help"],
            ["[default: 2]", "[default: time stamp + random suffix]", "[default: run: the script's own length;"],
        ),
        (
            ["analyze", "--help"],
            [
                "[default: the folder's name, or the file's without .json and .gz (foo.json: foo);",
                "[default: all cores]",
                "pip install 'commprof[cluster]'",
            ],
        ),
        (
            ["sweep", "--help"],
            [
                "[default: as many as fit in GPU memory; all on CPU]",
                "--max-steps",
                "sweep, tune, advise: --warmup-steps + --steps-per-repeat,",
            ],
        ),
        (["tune", "--help"], ["--max-steps", "[default: 4; with a script and --max-steps:"]),
        (["advise", "--help"], ["--max-steps", "[default: 4; with a script and --max-steps:"]),
        (["bench", "--help"], ["[default: 1G on GPUs, 16M on CPU]", "[default: bench-<time stamp>]"]),
    ],
)
def test_help_states_the_defaults_it_cannot_show_otherwise(command, stated, capsys, monkeypatch):
    """Defaults that depend on the machine are written in the help text, brackets kept (no markup eats them)."""
    monkeypatch.setenv("COLUMNS", "250")
    with pytest.raises(SystemExit) as exit_info:
        main(command)
    shown = " ".join(capsys.readouterr().out.split())
    assert exit_info.value.code == 0
    for text in stated:
        assert text in shown, text


def test_static_graph_with_accumulation_is_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code, err = run_main(["run", "--static-graph", "--grad-accum", "2"], capsys)
    assert code == 2 and "pytorch/pytorch#143580" in err
