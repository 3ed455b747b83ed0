"""What a command is doing, on stderr: the progress of a launch (polling the progress file that local rank 0
rewrites as it steps), of work without steps (a count of files, a bench), and one-line notes. An interactive
terminal gets Rich's live displays; a log (a pipe, a file, CI, a SLURM job's output) gets plain lines
(cli/progress_lines); `--quiet`, nothing."""

from __future__ import annotations

import dataclasses
import time
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Callable, Iterator, Protocol

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from commprof.cli.console import err
from commprof.cli.progress_lines import Clock, StepLines, WorkLines
from commprof.commands.outcome import News
from commprof.launch import progress as progress_file
from commprof.launch.hang_evidence import describe_hang
from commprof.launch.progress import ticking
from commprof.render.hang_words import hang_text
from commprof.results.hang import read_evidence

POLL_SECONDS = 0.2


class StepsView(Protocol):
    """How a launch's progress is shown: `show` the state read at each poll (None: nothing written yet), `end`
    on the state read once more after the launch ended, which is the last rank 0 wrote."""

    def start(self) -> None: ...

    def show(self, state: progress_file.Progress | None) -> None: ...

    def end(self, state: progress_file.Progress | None, failed: bool) -> None: ...


class StepsBar:
    """Rich's bar, for a terminal. `steps`: the launch's total, None where only the end tells (a script without
    --max-steps: the bar counts up, and its total is the steps run when the launch ends)."""

    def __init__(self, console: Console, steps: int | None, subject: str = "", news: Callable[[], str] = str):
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[detail]}"),
            TimeElapsedColumn(),
            console=console,
            transient=False,
        )
        self.subject = f"{subject}: " if subject else ""
        self.news = news
        self.task = self.progress.add_task(f"{self.subject}starting ranks", total=steps, detail="")

    def start(self) -> None:
        self.progress.start()

    def show(self, state: progress_file.Progress | None, description: str | None = None) -> None:
        if state is not None:
            self.progress.update(
                self.task,
                completed=state.step,
                total=state.steps,
                description=self.subject + (description or f"rank {state.rank} {state.phase}"),
                detail=f"step {state.step_ms:.1f} ms" + (f"; {news}" if (news := self.news()) else ""),
            )

    def end(self, state: progress_file.Progress | None, failed: bool) -> None:
        if state is not None and not failed:  # done: every step that ran, of a total that is now known
            state = dataclasses.replace(state, steps=state.steps or state.step)
        self.show(state, None if failed else f"rank {state.rank if state else 0} done")
        self.progress.stop()


@contextmanager
def watch_steps(path: Path, view: StepsView, interval_s: float = POLL_SECONDS) -> Iterator[None]:
    """The launch runs in the block; `path` is read every `interval_s` seconds and once more when it has ended (its
    ranks have exited), so that the view ends on the last state rank 0 wrote, not on the last one polled."""
    view.start()
    failed = True
    try:
        with ticking(lambda: view.show(progress_file.read_progress(path)), interval_s):
            yield
        failed = False
    finally:
        view.end(progress_file.read_progress(path), failed)


class ConsoleFeedback:
    """commands.outcome.Feedback drawn on stderr (`console`); nothing at all when quiet. `clock` and `interval_s`
    (how often progress is polled) are for tests."""

    def __init__(
        self,
        quiet: bool,
        console: Console = err,
        clock: Clock = time.monotonic,
        interval_s: float = POLL_SECONDS,
    ):
        self.quiet, self.console, self.clock, self.interval_s = quiet, console, clock, interval_s

    def info(self, message: str) -> None:
        if not self.quiet:
            self.say(message)

    def say(self, line: str) -> None:
        """One plain line: no markup, no highlighting, never wrapped."""
        self.console.print(line, markup=False, highlight=False, emoji=False, soft_wrap=True)

    def watch(
        self, progress_file: Path, total_steps: int | None, subject: str = "", news: News = None
    ) -> AbstractContextManager:
        if self.quiet:
            return nullcontext()
        view: StepsView = (
            StepsBar(self.console, total_steps, subject, news or str)
            if self.console.is_terminal
            else StepLines(
                self.say,
                self.clock,
                hang=lambda: hang_text_in(progress_file.parent),
                subject=subject,
                news=news or str,
            )
        )
        return watch_steps(progress_file, view, self.interval_s)

    def status(self, message: str) -> AbstractContextManager:
        if self.quiet:
            return nullcontext()
        if self.console.is_terminal:
            return self.console.status(message, spinner="dots")
        return self._work_lines(message)

    def counter(self, description: str) -> AbstractContextManager[Callable[[int, int], None]]:
        if self.quiet:
            return nullcontext(lambda done, total: None)
        if self.console.is_terminal:
            return self._counter_bar(description)
        return self._work_lines(description)

    @contextmanager
    def _work_lines(self, description: str) -> Iterator[Callable[[int, int], None]]:
        lines = WorkLines(description, self.say, self.clock)
        try:
            with ticking(lines.tick, self.interval_s):
                yield lines.update
        finally:
            lines.end()

    @contextmanager
    def _counter_bar(self, description: str) -> Iterator[Callable[[int, int], None]]:
        columns = (
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]}"),
            TimeRemainingColumn(),
        )
        with Progress(*columns, console=self.console, transient=True) as progress:
            task = progress.add_task(description, total=None, rate="")
            start = time.monotonic()

            def advance(done: int, total: int) -> None:
                elapsed = time.monotonic() - start
                progress.update(
                    task, completed=done, total=total, rate=f"{done / elapsed:.1f}/s" if elapsed > 0 else ""
                )

            yield advance


def hang_text_in(folder: Path) -> str | None:
    """Where the stalled ranks are, from what they wrote about themselves in `folder`."""
    hang = describe_hang(read_evidence(folder))
    return hang_text(hang) if hang is not None else None
