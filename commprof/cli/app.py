"""The `commprof` command: registers one module per subcommand and maps errors to exit codes."""

from __future__ import annotations

import sys

import typer
from typer.exceptions import Abort, Exit, TyperException

from commprof.cli import advise, analyze, backends, bench, compare, console, diff, report, run, scale, sweep, tune, view

app = typer.Typer(
    name="commprof",
    help="Communication profiler for PyTorch DistributedDataParallel: where does the step time go?",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # click's plain help, not Rich's panels: at 80 columns (and in a pipe) Rich's option table cut the long flag
    # names (--gradient-as-bucket-view / --no-...) to fit, and its markup ate brackets ('commprof[cluster]');
    # tests/test_help.py holds every command's help to 80 columns with every option name whole
    rich_markup_mode=None,
)
app.command()(run.run)
app.command()(sweep.sweep)
app.command()(tune.tune)
app.command()(advise.advise)
app.command()(analyze.analyze)
app.command()(report.report)
app.command()(view.view)
app.command()(diff.diff)
app.command()(bench.bench)
app.command()(backends.backends)
app.command()(compare.compare)
app.command()(scale.scale)

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def main(argv: list[str] | None = None) -> None:
    """Entry point: one line on stderr and exit code 1 (run failed) or 2 (bad input) on errors."""
    from commprof.errors import CommprofError
    from commprof.native_logs import silence_in_this_process

    silence_in_this_process()
    try:
        code = app(args=argv, prog_name="commprof", standalone_mode=False)
    except Exit as exc:
        code = exc.exit_code
    except TyperException as exc:  # unknown options, bad values: the parser's own message, one line
        message = exc.format_message().strip()
        if type(exc).__name__ == "NoArgsIsHelpError":  # `commprof` alone: the help, as --help prints it
            sys.stdout.write(message + "\n")
        elif message:  # empty when the parser already printed help (no arguments)
            console.error(message.replace("\n", " "))
        code = EXIT_USAGE
    except Abort:
        console.error("interrupted")
        code = 130
    except CommprofError as exc:
        console.error(str(exc))
        code = exc.exit_code
    except KeyboardInterrupt:
        console.error("interrupted")
        code = 130
    sys.exit(code if isinstance(code, int) else EXIT_OK)
