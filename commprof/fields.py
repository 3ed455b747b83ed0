"""The two helpers every declared option uses: `option` (a dataclass field that is also a command-line option, with
its default and help) and `require` (its validation, a one-line UsageError)."""

from __future__ import annotations

from dataclasses import field
from typing import Any

from commprof.errors import UsageError


def option(default: Any, help: str, flag: str | None = None, shown: str | None = None) -> Any:
    """A field that is also a command-line option (`flag`: its name there when it differs; `shown`: the default as
    --help says it, where the value alone would mislead)."""
    return field(default=default, metadata={"help": help, "flag": flag, "shown": shown})


def require(condition: bool, message: str) -> None:
    if not condition:
        raise UsageError(message)
