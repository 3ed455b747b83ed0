"""All command output goes through here: results on stdout, progress and errors on stderr."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

out = Console(highlight=False)
err = Console(stderr=True, highlight=False)


def error(message: str) -> None:
    err.print(f"[bold red]error:[/] {escape(message)}", soft_wrap=True)


def info(message: str, quiet: bool = False) -> None:
    if not quiet:
        err.print(escape(message), soft_wrap=True)
