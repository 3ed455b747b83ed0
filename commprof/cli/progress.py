"""What a command is doing, on stderr: the live progress of a launch (polling the progress file that
local rank 0 rewrites each step), a spinner for work without steps, and one-line notes."""

from __future__ import annotations

import threading
import time
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Callable, Iterator

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from commprof.cli.console import err, info
from commprof.launch.progress import read_progress

POLL_SECONDS = 0.2


@contextmanager
def run_progress(path: Path, steps: int, enabled: bool) -> Iterator[None]:
    if not enabled:
        yield
        return
    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[detail]}"),
        TimeElapsedColumn(),
        console=err,
        transient=False,
    )
    task = progress.add_task("starting ranks", total=steps, detail="")
    done = threading.Event()

    def poll() -> None:
        while not done.wait(POLL_SECONDS):
            state = read_progress(path)
            if state is not None:
                progress.update(
                    task,
                    completed=state.step,
                    total=state.steps,
                    description=f"rank 0 {state.phase}",
                    detail=f"step {state.step_ms:.1f} ms",
                )

    thread = threading.Thread(target=poll, daemon=True)
    with progress:
        thread.start()
        try:
            yield
        finally:
            done.set()
            thread.join()


class ConsoleFeedback:
    """commands.outcome.Feedback drawn on stderr; nothing at all when quiet."""

    def __init__(self, quiet: bool):
        self.quiet = quiet

    def info(self, message: str) -> None:
        info(message, self.quiet)

    def watch(self, progress_file: Path, total_steps: int) -> AbstractContextManager:
        return run_progress(progress_file, total_steps, enabled=not self.quiet)

    def status(self, message: str) -> AbstractContextManager:
        return nullcontext() if self.quiet else err.status(message, spinner="dots")

    @contextmanager
    def counter(self, description: str) -> Iterator[Callable[[int, int], None]]:
        if self.quiet:
            yield lambda done, total: None
            return
        columns = (
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]}"),
            TimeRemainingColumn(),
        )
        with Progress(*columns, console=err, transient=True) as progress:
            task = progress.add_task(description, total=None, rate="")
            start = time.monotonic()

            def advance(done: int, total: int) -> None:
                elapsed = time.monotonic() - start
                progress.update(
                    task, completed=done, total=total, rate=f"{done / elapsed:.1f}/s" if elapsed > 0 else ""
                )

            yield advance
