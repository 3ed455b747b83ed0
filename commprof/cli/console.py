"""All command output goes through here: results on stdout, progress and errors on stderr."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False)


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
    from commprof.render.outputs import show

    if outcome.note:
        info(outcome.note, quiet)
    if outcome.result is None:
        return
    if json_out:
        out.print_json(outcome.result.to_json())
        return
    if not quiet:
        show(outcome.result, out)
    if outcome.traces is not None:
        out.print(f"traces: {outcome.traces}/", markup=False)
    if outcome.files:
        # files beside the page by name; others (TensorBoard's event files next to the traces) by path
        others = ", ".join(f.name if f.parent == outcome.files[0].parent else f"{f}/" for f in outcome.files[1:])
        out.print(f"report: {outcome.files[0]}" + (f" (also {others})" if others else ""), markup=False)
