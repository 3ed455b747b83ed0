"""The profiler's own cost in a run: each rank's step times inside the profiled window against its steps
outside it (run.json records every rank's steps, profiled or not, up to runlog.STEP_TIMES_AFTER_WINDOW after
the window)."""

from __future__ import annotations

import statistics
from collections.abc import Collection

from commprof.config import ProfileSchedule
from commprof.results.common import WARN_SLOWDOWN, job_steps
from commprof.results.report import JobStep, ProfilerDistortion
from commprof.results.run_record import RunRecord

SKIP_FIRST_STEPS = 3  # warm-up: allocator, autograd graph, connections
DRIFT_STEPS = 3  # unprofiled steps on each side of the window, at least, to measure the job's drift


def touched_steps(schedule: ProfileSchedule) -> range:
    """The steps the profiler touched: its warm-up and active steps, and the one after them, whose collectives
    wait for the ranks still writing their traces (the write runs between the last active step and that one)."""
    return range(schedule.wait, schedule.total + 1)


def untouched(schedule: ProfileSchedule, index: int) -> bool:
    """Whether the step at `index` (from 0) ran as the job runs: after the first few, and not touched by the
    profiler."""
    return index >= SKIP_FIRST_STEPS and index not in touched_steps(schedule)


def _inside_and_outside(
    steps: list[float], schedule: ProfileSchedule, side: tuple[int, int] | None = None, compiled: Collection[int] = ()
) -> tuple[list[float], list[float]]:
    """The steps of the profiler's active window, and those it did not touch after the first few, nor compiled in
    (torch.compile: `compiled`, the steps from 1). `side`: the first and last step of the stretch the window lies in
    (analysis/stretches.py), None where the run held or the window holds a change: only the steps of its stretch
    are set against the window, never those of a stretch the window did not see."""
    active = range(schedule.wait + schedule.warmup, schedule.total)
    compiled_in = {step - 1 for step in compiled}
    inside = [ms for i, ms in enumerate(steps) if i in active]
    steps_of_side = _windows_side(side)
    outside = [
        ms for i, ms in enumerate(steps) if untouched(schedule, i) and i not in compiled_in and i + 1 in steps_of_side
    ]
    return inside, outside


def _windows_side(side: tuple[int, int] | None) -> range:
    """The steps (from 1) of the profiled window's stretch; every step where there is none."""
    return range(side[0], side[1] + 1) if side is not None else range(1, 2**62)


def profiler_distortion(run: RunRecord, side: tuple[int, int] | None = None) -> list[ProfilerDistortion]:
    """Per rank: median step inside the active window, median of the steps the profiler did not touch (after
    the first few, in the window's stretch), and the slowdown. Empty when run.json lacks either kind of
    step."""
    found = []
    for rank in run.ranks:
        inside, outside = _inside_and_outside(rank.step_ms, run.config.schedule, side, _compiled(run))
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


def job_step(run: RunRecord, side: tuple[int, int] | None = None) -> JobStep | None:
    """The job's step (its slowest rank's at each step) inside the active window and outside the profiler's steps
    (in the window's stretch), each a median; None when run.json lacks either kind of step."""
    inside, outside = _inside_and_outside(_job_steps(run), run.config.schedule, side, _compiled(run))
    return JobStep(statistics.median(inside), statistics.median(outside)) if inside and outside else None


def unprofiled_job_steps(run: RunRecord) -> list[float]:
    """The job's step time (its slowest rank's) at each step the profiler did not touch, after the warm-up steps:
    what the job costs without commprof watching. Empty when run.json lacks them."""
    return _inside_and_outside(_job_steps(run), run.config.schedule, compiled=_compiled(run))[1]


def _compiled(run: RunRecord) -> list[int]:
    return run.compiled.steps if run.compiled else []


def _job_steps(run: RunRecord) -> list[float]:
    ranks = [r.step_ms for r in run.ranks]
    return job_steps(ranks) if ranks and all(ranks) else []


def job_drift_ms(run: RunRecord, side: tuple[int, int] | None = None) -> float:
    """How far the job's step moved on its own within this launch: the median of its unprofiled steps before the
    profiler's window against the median of those after it (0, unmeasured, where either side has fewer than
    DRIFT_STEPS: two steps just out of warm-up read as a drift of 50%). The profiled window lies between the two,
    so a difference smaller than this is not one a rerun would keep. A change of step is no drift: only the window's
    stretch is weighed."""
    schedule = run.config.schedule
    steps = _inside_and_outside(_job_steps(run), schedule, side, _compiled(run))[1]
    if not steps:
        return 0.0
    steps_of_side = _windows_side(side)
    compiled = set(_compiled(run))
    kept = [i for i in range(SKIP_FIRST_STEPS, schedule.wait) if i + 1 in steps_of_side and i + 1 not in compiled]
    before = len(kept)
    if before < DRIFT_STEPS or len(steps) - before < DRIFT_STEPS:
        return 0.0
    return abs(statistics.median(steps[:before]) - statistics.median(steps[before:]))


def large_slowdown(job: JobStep | None) -> float | None:
    """The profiler's slowdown of the job's steps it recorded when above WARN_SLOWDOWN, else None."""
    return job.slowdown if job is not None and job.slowdown > WARN_SLOWDOWN else None
