"""Every command's --help read at 80 columns, as a terminal or a pipe shows it: no line longer, every option's
name whole in the options list, flags without a type tag, and the list of commands with each one-liner whole."""

import re

import pytest
from typer.main import get_command
from typer.testing import CliRunner

from commprof.cli.app import app

GROUP = get_command(app)  # click's Group (Typer's own copy of click in newer Typers)
COMMANDS = sorted(GROUP.commands)  # type: ignore[attr-defined]


def shown_help(args: list[str]) -> str:
    result = CliRunner().invoke(app, [*args, "--help"], env={"COLUMNS": "80"}, terminal_width=80)
    assert result.exit_code == 0, result.output
    return result.output


def declared_names(text: str) -> dict[str, str]:
    """Each option name in the options list, with the declaration it stands in (the part of its line before
    the help text, or the whole line when the help starts on the next)."""
    names = {}
    for line in text.splitlines():
        if line.startswith("  -"):
            declaration = re.split(r"\s{2,}", line.strip())[0]
            for name in re.findall(r"(?:^|[\s,/])(-{1,2}[\w-]+)", declaration):
                names[name] = declaration
    return names


@pytest.mark.parametrize("command", COMMANDS)
def test_help_fits_80_columns_with_every_option_whole(command):
    text = shown_help([command])
    too_long = [line for line in text.splitlines() if len(line) > 80]
    assert too_long == []
    shown = declared_names(text)
    for param in GROUP.commands[command].params:
        if param.param_type_name != "option":
            continue
        for name in param.opts + param.secondary_opts:
            assert name in shown, f"{command} --help: {name} is not shown whole"
        if getattr(param, "is_flag", False):  # a flag takes no value: its names alone, no <bool>
            assert "<" not in shown[param.opts[0]], shown[param.opts[0]]
    assert "<bool>" not in text and "\\[" not in text


def test_run_help_names_its_flags_as_typed():
    shown = declared_names(shown_help(["run"]))
    assert shown["--gradient-as-bucket-view"] == "--gradient-as-bucket-view / --no-gradient-as-bucket-view"
    assert shown["--reshard-after-forward"] == "--reshard-after-forward / --no-reshard-after-forward"
    assert shown["--tf32"] == "--tf32 / --no-tf32"
    assert shown["--bucket-cap-mb"] == "--bucket-cap-mb <float>"
    assert shown["-q"] == "-q, --quiet"


def test_the_list_of_commands_shows_each_one_liner_whole():
    text = shown_help([])
    assert max(len(line) for line in text.splitlines()) <= 80
    for name in COMMANDS:
        first_sentence = (GROUP.commands[name].help or "").split("\n\n")[0]
        assert len(first_sentence) <= 64 and first_sentence.endswith("."), name
        assert f"  {name.ljust(8)}  {first_sentence}\n" in text, name


def test_commprof_alone_prints_its_help(capsys):
    from commprof.cli.app import main

    with pytest.raises(SystemExit) as exit_info:
        main([])
    captured = capsys.readouterr()
    assert exit_info.value.code == 2 and captured.err == ""
    assert captured.out.startswith("Usage: commprof [OPTIONS] COMMAND [ARGS]...\n") and "\n  scale  " in captured.out
