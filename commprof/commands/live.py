"""While `commprof run` runs: its ranks' whole-run records, read every few seconds as the ranks rewrite them, drawn
as TensorBoard scalars (render/live_scalars.py), and the run's lasting change (analysis/change_point.py), once it
shows one, told on the progress line."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from commprof.analysis.whole_run import whole_run
from commprof.commands.outcome import Feedback
from commprof.config import ProfileSchedule, RunConfig
from commprof.launch.job import Watch
from commprof.launch.progress import ticking
from commprof.render.live_scalars import LIVE, LiveScalars
from commprof.render.whole_run_view import change_line
from commprof.results.step_ledger import LEDGER_SUFFIX, read_ledgers

LIVE_S = 2.5  # the ranks rewrite their records every 5 s


class LiveRun:
    def __init__(self, run_dir: Path, schedule: ProfileSchedule | None):
        """`schedule`: the profiler's, None when the run profiles nothing."""
        self.run_dir, self.schedule = run_dir, schedule
        self.scalars = LiveScalars(run_dir / "tensorboard" / LIVE)
        self.stamps: tuple[int, ...] = ()
        self.news = ""  # the run's change in a few words; "" while it shows none
        self.broken = False

    def tick(self) -> None:
        """Anything new in the records: their new steps drawn, the change looked for again. Whatever goes wrong
        here ends the live view, never the run (its report reads the records again at the end)."""
        if self.broken:
            return
        try:
            stamps = tuple(p.stat().st_mtime_ns for p in sorted(self.run_dir.glob(f"rank*{LEDGER_SUFFIX}")))
            if stamps == self.stamps:
                return
            self.stamps = stamps
            ledgers = read_ledgers(self.run_dir)
            self.scalars.add(ledgers)
            whole = whole_run(ledgers, self.schedule)
            change = whole.changes[-1] if whole is not None and whole.changes else None
            self.news = change_line(change) if change is not None else ""
            if change is not None:
                self.scalars.say(self.news, change.step)
        except Exception:  # noqa: BLE001 - a view of the run must not cost the run
            self.broken = True

    def close(self) -> None:
        self.tick()
        self.scalars.close()


def watching(config: RunConfig, feedback: Feedback) -> Watch:
    """`feedback.watch` for a launch of `config`, with the live view of its records beside it."""

    @contextmanager
    def watch(progress: Path, total_steps: int | None) -> Iterator[None]:
        live = LiveRun(config.run_dir, config.schedule if config.profiled else None)
        try:
            with ticking(live.tick, LIVE_S), feedback.watch(progress, total_steps, news=lambda: live.news):
                yield
        finally:
            live.close()

    return watch
