"""The profiler's own cost in a run: each rank's step times inside the profiled window against its steps
outside it (run.json records every rank's steps, profiled or not, up to runlog.STEP_TIMES_AFTER_WINDOW after
the window)."""

from __future__ import annotations

import statistics

from commprof.config import ProfileSchedule
from commprof.results.common import WARN_SLOWDOWN, job_steps
from commprof.results.report import ProfilerDistortion, job_slowdown
from commprof.results.run_record import RunRecord

SKIP_FIRST_STEPS = 3  # warm-up: allocator, autograd graph, connections
DRIFT_STEPS = 3  # unprofiled steps on each side of the window, at least, to measure the job's drift


def touched_steps(schedule: ProfileSchedule) -> range:
    """The steps the profiler touched: its warm-up and active steps, and the one after them, whose collectives
    wait for the ranks still writing their traces (the write runs between the last active step and that one)."""
    return range(schedule.wait, schedule.total + 1)


def profiler_distortion(run: RunRecord) -> list[ProfilerDistortion]:
    """Per rank: median step inside the active window, median of the steps the profiler did not touch (after
    the first few), and the slowdown. Empty when run.json lacks either kind of step."""
    schedule = run.config.schedule
    active = range(schedule.wait + schedule.warmup, schedule.total)
    traced = touched_steps(schedule)
    found = []
    for rank in run.ranks:
        steps = rank.step_ms
        inside = [ms for i, ms in enumerate(steps) if i in active]
        outside = [ms for i, ms in enumerate(steps) if i >= SKIP_FIRST_STEPS and i not in traced]
        if inside and outside:
            profiled, unprofiled = statistics.median(inside), statistics.median(outside)
            found.append(
                ProfilerDistortion(
                    rank=rank.rank,
                    profiled_ms=profiled,
                    unprofiled_ms=unprofiled,
                    slowdown=profiled / unprofiled - 1 if unprofiled > 0 else 0.0,
                )
            )
    return found


def unprofiled_job_steps(run: RunRecord) -> list[float]:
    """The job's step time (its slowest rank's) at each step the profiler did not touch, after the warm-up steps:
    what the job costs without commprof watching. Empty when run.json lacks them."""
    ranks = [r.step_ms for r in run.ranks]
    if not ranks or not all(ranks):
        return []
    traced = touched_steps(run.config.schedule)
    return [ms for i, ms in enumerate(job_steps(ranks)) if i >= SKIP_FIRST_STEPS and i not in traced]


def job_drift_ms(run: RunRecord) -> float:
    """How far the job's step moved on its own within this launch: the median of its unprofiled steps before the
    profiler's window against the median of those after it (0, unmeasured, where either side has fewer than
    DRIFT_STEPS: two steps just out of warm-up read as a drift of 50%). The profiled window lies between the two,
    so a difference smaller than this is not one a rerun would keep."""
    steps = unprofiled_job_steps(run)
    if not steps:
        return 0.0
    before = max(0, run.config.schedule.wait - SKIP_FIRST_STEPS)  # unprofiled_job_steps keeps them in step order
    if before < DRIFT_STEPS or len(steps) - before < DRIFT_STEPS:
        return 0.0
    return abs(statistics.median(steps[:before]) - statistics.median(steps[before:]))


def large_slowdown(found: list[ProfilerDistortion]) -> float | None:
    """The profiler's slowdown of the steps it recorded (results/report.job_slowdown) when above WARN_SLOWDOWN,
    else None."""
    slowdown = job_slowdown(found)
    return slowdown if slowdown > WARN_SLOWDOWN else None
