"""Where a run's step changed for good: a link that slows, a rank that slows from step N on. Single stand-out steps
are the whole run's stand-outs; this is a shift of the step itself, which no window of a few steps shows whole.

One change point at most, over the whole run's series (one point per block of steps): the split where the points on
each side lie closest to their side's median (the least absolute deviation), kept when the two medians differ by
MIN_SHIFT of the step or more and by SEPARATION times the standard error of that difference (from each side's scaled
median absolute deviation and its count: a run noisy on both sides of a clear shift keeps it), each side holding
MIN_SIDE points (MIN_SIDE_SHARE of the run, at least): a drift of a few percent, or a few slow steps, is no change.
What grew is told apart by the time with a collective in flight: the step's change against its communication's."""

from __future__ import annotations

import math
import statistics

from commprof.results.whole_run import ChangePoint, WholeRunPoint

MIN_SHIFT = 0.2  # of the step before
SEPARATION = 5.0  # the medians' difference against its standard error
MIN_SIDE, MIN_SIDE_SHARE = 5, 0.05
MAD_TO_SIGMA = 1.4826


def change_point(series: list[WholeRunPoint], left_out: frozenset[int] | set[int] = frozenset()) -> ChangePoint | None:
    """The run's one lasting change of step, if it has one. `left_out`: steps not to weigh (the first ones, the
    profiler's reach: slower by the profiler, not by the run); a point holding one is left out."""
    series = [p for p in series if not left_out.intersection(range(p.first_step, p.first_step + p.steps))]
    side = max(MIN_SIDE, int(len(series) * MIN_SIDE_SHARE))
    if len(series) < 2 * side:
        return None
    steps = [p.step_ms for p in series]
    k = min(range(side, len(series) - side + 1), key=lambda k: _deviation(steps[:k]) + _deviation(steps[k:]))
    before, after = series[:k], series[k:]
    step_before, step_after = statistics.median(steps[:k]), statistics.median(steps[k:])
    error = math.sqrt(_jitter(steps[:k]) ** 2 / k + _jitter(steps[k:]) ** 2 / (len(steps) - k))
    if abs(step_after - step_before) < max(MIN_SHIFT * step_before, SEPARATION * error):
        return None
    comm_before = statistics.median(p.comm_ms for p in before)
    comm_after = statistics.median(p.comm_ms for p in after)
    return ChangePoint(
        step=after[0].first_step,
        step_ms_before=step_before,
        step_ms_after=step_after,
        comm_ms_before=comm_before,
        comm_ms_after=comm_after,
        grew=_what_grew(step_after - step_before, comm_after - comm_before),
    )


def _deviation(values: list[float]) -> float:
    """How far the values lie from their median, summed: the split where both sides lie closest is where it changed
    (robust to a few slow steps, as a sum of squares is not)."""
    middle = statistics.median(values)
    return sum(abs(v - middle) for v in values)


def _jitter(values: list[float]) -> float:
    middle = statistics.median(values)
    return MAD_TO_SIGMA * statistics.median(abs(v - middle) for v in values)


def _what_grew(step_change: float, comm_change: float) -> str:
    """ "communication" where the time with a collective in flight moved as much as the step (two thirds of it or
    more, the same way), "computation" where it did not move with it, else "both"."""
    if step_change and comm_change / step_change >= 2 / 3:
        return "communication"
    if abs(comm_change) <= abs(step_change) / 3:
        return "computation"
    return "both"
