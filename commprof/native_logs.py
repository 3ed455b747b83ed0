"""torch's C++ code writes warnings with C++ stack traces to stderr (store connection retries,
rendezvous errors). The CLI reports such failures in one line, so its own process silences them;
worker processes get the user's setting back, and keep those messages in their log files."""

from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Iterator

VARIABLE = "TORCH_CPP_LOG_LEVEL"  # read once, when torch's libraries load
_silenced = False


def silence_in_this_process() -> None:
    global _silenced
    if VARIABLE not in os.environ:
        os.environ[VARIABLE] = "FATAL"
        _silenced = True


def restore_for_workers() -> None:
    """Call after torch is imported and before starting worker processes."""
    global _silenced
    if _silenced:
        os.environ.pop(VARIABLE, None)
        _silenced = False


@contextmanager
def unsilenced() -> Iterator[None]:
    """The user's setting back for a while: to start a process that outlives it (and loads torch's libraries)."""
    if not _silenced:
        yield
        return
    value = os.environ.pop(VARIABLE)
    try:
        yield
    finally:
        os.environ[VARIABLE] = value
