"""All command output goes through here: results on stdout, progress and errors on stderr."""

from __future__ import annotations

import sys
from contextlib import contextmanager, redirect_stdout
from typing import Iterator

from rich.console import Console
from rich.markup import escape

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False)


@contextmanager
def stdout_for_the_result(json_out: bool) -> Iterator[None]:
    """--json: the JSON alone on stdout; what else would write there while the command works (a script's own
    lines, shown as torchrun shows them) goes to stderr."""
    if not json_out:
        yield
        return
    out.file = sys.stdout
    try:
        with redirect_stdout(sys.stderr):
            yield
    finally:
        out.file = None  # type: ignore[assignment]  # rich: None is sys.stdout at each print


def error(message: str, traceback: str = "") -> None:
    """One line; below the user's own traceback, when their script raised (printed as python prints it)."""
    if traceback:
        err.print(traceback, markup=False, highlight=False, emoji=False, soft_wrap=True)
    err.print(f"[bold red]error:[/] {escape(message)}", soft_wrap=True)


def interrupted(message: str) -> None:
    """Ctrl-C or SIGTERM: what the run had done and left, in one line (not an error of commprof's or the job's)."""
    err.print(escape(message), soft_wrap=True)


def info(message: str, quiet: bool = False) -> None:
    if not quiet:
        err.print(escape(message), soft_wrap=True)


def finish(outcome, quiet: bool, json_out: bool = False) -> None:
    """A command's outcome: the JSON document alone on stdout (--json: everything else goes to stderr or
    nowhere), or the result's tables (unless quiet) and where its files are."""
    from commprof.render.outputs import said, show

    if outcome.note:
        info(outcome.note, quiet)
    if outcome.result is None:
        return
    if json_out:
        out.print_json(said(outcome.result).to_json())  # the words of its facts beside them, as report.json
        return
    if not quiet:
        show(outcome.result, out)
    if outcome.traces is not None:
        out.print(f"traces: {outcome.traces}/", markup=False)
    if outcome.logs is not None:
        out.print(f"script output: {outcome.logs}/ (each rank's stdout.log and stderr.log)", markup=False)
    if outcome.files:
        # files beside the page by name; others (TensorBoard's event files next to the traces) by path
        others = ", ".join(f.name if f.parent == outcome.files[0].parent else f"{f}/" for f in outcome.files[1:])
        out.print(f"report: {outcome.files[0]}" + (f" (also {others})" if others else ""), markup=False)
