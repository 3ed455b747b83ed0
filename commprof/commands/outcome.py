"""What a command hands back to its caller, and how it reports progress while it works."""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Protocol

from commprof.results.common import Result

News = Callable[[], str] | None  # "" while there is nothing to tell


@dataclass(frozen=True)
class Outcome:
    result: Result | None  # None: nothing to report here (e.g. rank 0 runs on another node)
    files: list[Path] = field(default_factory=list)  # what was written, the page first
    traces: Path | None = None  # the traces this result came from, when it made them
    logs: Path | None = None  # where a script's own output was kept, when it ran one
    note: str | None = None  # said instead of a result, or beside it


class Feedback(Protocol):
    """How a command tells its caller what it is doing (the CLI draws it; tests pass SILENT)."""

    def info(self, message: str) -> None: ...

    def watch(
        self, progress_file: Path, total_steps: int | None, subject: str = "", news: News = None
    ) -> AbstractContextManager:
        """A launch's progress, read from the file its local rank 0 rewrites; `total_steps` None: known at the end;
        `subject`: which of several launches this is, named on each line; `news`: what the run has shown so far
        (its lasting change), said as soon as it is new and on the lines after it."""
        ...

    def status(self, message: str) -> AbstractContextManager: ...

    def counter(self, description: str) -> AbstractContextManager[Callable[[int, int], None]]:
        """A count of items done (files, say), with the rate and the time left; yields `advance(done, total)`."""
        ...


class Silent:
    def info(self, message: str) -> None:
        pass

    def watch(
        self, progress_file: Path, total_steps: int | None, subject: str = "", news: News = None
    ) -> AbstractContextManager:
        return nullcontext()

    def status(self, message: str) -> AbstractContextManager:
        return nullcontext()

    def counter(self, description: str) -> AbstractContextManager[Callable[[int, int], None]]:
        return nullcontext(lambda done, total: None)


SILENT = Silent()
