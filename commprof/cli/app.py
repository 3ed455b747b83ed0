"""The `commprof` command: registers one module per subcommand and maps errors to exit codes."""

from __future__ import annotations

import functools
import signal
import sys
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import typer
from typer.exceptions import Abort, Exit, TyperException

from commprof.cli import (
    advise,
    analyze,
    backends,
    bench,
    compare,
    console,
    diagnose,
    diff,
    report,
    run,
    scale,
    sweep,
    tune,
    view,
)

app = typer.Typer(
    name="commprof",
    help=(
        "Communication profiler for PyTorch distributed training (DDP, FSDP2, ZeRO, Horovod, device meshes): where "
        "does the step time go?"
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # click's plain help, not Rich's panels: at 80 columns (and in a pipe) Rich's option table cut the long flag
    # names (--gradient-as-bucket-view / --no-...) to fit, and its markup ate brackets ('commprof[cluster]');
    # tests/test_help.py holds every command's help to 80 columns with every option name whole
    rich_markup_mode=None,
)
COMMANDS: tuple[Callable[..., Any], ...] = (
    run.run,
    sweep.sweep,
    tune.tune,
    advise.advise,
    analyze.analyze,
    report.report,
    view.view,
    diff.diff,
    diagnose.diagnose,
    bench.bench,
    backends.backends,
    compare.compare,
    scale.scale,
)


def _says_interrupts(command: Callable[..., Any]) -> Callable[..., Any]:
    """Ctrl-C (KeyboardInterrupt) and SIGTERM (Interrupted) end a command with its one line and 128 + the signal's
    number. Caught here, inside Typer, which turns a KeyboardInterrupt into a silent exit code 130."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from commprof.errors import Interrupted

        try:
            return command(*args, **kwargs)
        except KeyboardInterrupt as exc:
            stop = exc if isinstance(exc, Interrupted) else Interrupted()
            console.interrupted(stop.message)
            raise Exit(stop.exit_code) from None

    return wrapper


for _command in COMMANDS:
    app.command()(_says_interrupts(_command))

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130  # 130: 128 + SIGINT


def main(argv: list[str] | None = None) -> None:
    """Entry point: one line on stderr and exit code 1 (run failed) or 2 (bad input) on errors; on SIGINT
    (Ctrl-C) or SIGTERM, one line and 130 or 143."""
    from commprof.errors import CommprofError, Interrupted, RunFailed
    from commprof.native_logs import silence_in_this_process

    silence_in_this_process()
    try:
        with _sigterm_interrupts():
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
        code = EXIT_INTERRUPTED
    except CommprofError as exc:
        from commprof.render.failure_words import error_text

        console.error(error_text(exc), exc.traceback if isinstance(exc, RunFailed) else "")
        code = exc.exit_code
    except KeyboardInterrupt as exc:  # outside a command (a command's own: _says_interrupts)
        stop = exc if isinstance(exc, Interrupted) else Interrupted()
        console.interrupted(stop.message)
        code = stop.exit_code
    sys.exit(code if isinstance(code, int) else EXIT_OK)


def guarded_main(argv: list[str] | None = None) -> int:
    """main(), and its exit code; anything else that escapes it (commprof's own bug) is one line naming the error
    and the file that keeps its traceback, exit code 1: no traceback reaches a user."""
    try:
        main(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except Exception as exc:  # noqa: BLE001 - one line, and where its traceback is kept
        console.error(f"commprof failed: {type(exc).__name__}: {exc} ({_kept_traceback()})")
        return EXIT_FAILED
    return EXIT_OK


def _kept_traceback() -> str:
    """The traceback of the exception being handled, written to a file of its own in the temporary folder: where it
    is, for a bug report."""
    import tempfile
    import time
    import traceback

    text = traceback.format_exc()
    try:
        with tempfile.NamedTemporaryFile(
            "w", prefix=f"commprof-error-{time.strftime('%Y%m%d-%H%M%S')}-", suffix=".log", delete=False
        ) as log:
            log.write(text)
        return f"a bug in commprof; its traceback is in {log.name}"
    except OSError:
        return "a bug in commprof; its traceback could not be written"


def console_main() -> None:
    """The installed command (and `python -m commprof`): main(), then out without the interpreter's teardown. With
    torch imported, tearing the interpreter down takes a second or more after the last line is printed
    (docs/benchmarks.md); what the teardown would do that matters is done here first: the threads still running
    are joined, the exit handlers run (the fork server stopped: launch/forkserver.py), the output flushed."""
    import atexit
    import contextlib
    import os
    import threading

    code = guarded_main()
    if "mpi4py.MPI" in sys.modules:  # a rank under mpirun: MPI finalizes in the teardown, which mpirun waits for
        sys.exit(code)
    for thread in threading.enumerate():
        if thread is not threading.main_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError):  # a reader that left early (`commprof ... | head`)
            stream.flush()
    os._exit(code)


@contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """SIGTERM (kill, a batch system's stop) unwinds commprof as Ctrl-C does, so that what it started is stopped
    and what it wrote is said; the handler it replaced comes back after (main() may be called in a test)."""
    from commprof.errors import raise_interrupted

    try:
        previous = signal.signal(signal.SIGTERM, raise_interrupted)
    except ValueError:  # not the main thread: signals are not ours to handle
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)
