"""A script decides how many steps it runs: one that ended inside the profiler's window is reported on the steps it
recorded, with a --schedule whose window lies inside the steps it ran (the fact; render/ says it)."""

from __future__ import annotations

from commprof.results.report import ShortWindow
from commprof.results.run_record import RunSummary


def short_window(run: RunSummary | None) -> ShortWindow | None:
    """The window's part the script covered and a schedule that fits; None where it covered the window (or is not
    a script's run, or never stepped)."""
    if run is None or not run.config.script or not run.steps_completed:
        return None
    schedule, ran = run.config.schedule, run.steps_completed
    first, last = schedule.wait + schedule.warmup + 1, schedule.total
    if not first <= ran < last:
        return None
    active = min(schedule.active, max(1, ran // 2))
    warmup = min(schedule.warmup, max(0, ran - active - 1))
    wait = max(0, ran - active - warmup - 1)  # the step after the window writes its trace: the script's last
    return ShortWindow(first_step=first, last_step=ran, asked=schedule.active, fits=(wait, warmup, active))
