"""All command output goes through here: results on stdout, progress and errors on stderr."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False)


def error(message: str) -> None:
    err.print(f"[bold red]error:[/] {escape(message)}", soft_wrap=True)


def info(message: str, quiet: bool = False) -> None:
    if not quiet:
        err.print(escape(message), soft_wrap=True)


_json_mode = False


def set_json_mode(enabled: bool) -> None:
    """--json: stdout carries only the JSON document; everything else goes to stderr or nowhere."""
    global _json_mode
    _json_mode = enabled


def json_mode() -> bool:
    return _json_mode
