"""Where a series of a run changed: the step time, or the time with a collective in flight, cut into stretches at
its change points (a link that slows, a rank that slows from step N on, a stretch that ends). Single stand-out steps
are the whole run's stand-outs; a change is a shift of the series itself, which no window of a few steps shows whole.

Binary segmentation: the series is split where the points on each side lie closest to their side's median (the
least absolute deviation), each side holding MIN_SIDE points (MIN_SIDE_SHARE of the run, at least), and each side
split again in turn, down to sides too short to split. Then each cut is moved to the best split between its
neighbours and weighed against the stretches either side of it, the weakest dropped until every one left passes: the
two medians differ by MIN_SHIFT of the smaller or more, and by SEPARATION times the standard error of that difference
(from the noisier side's scaled median absolute deviation and each side's count: a run noisy on both sides of a
clear shift keeps it; of 200 series of 120 steps with 30% noise, 1 was cut where it held:
benchmarks/measure/change_point_noise.py). A drift of a few percent,
or a few slow steps, is no change."""

from __future__ import annotations

import bisect
import math
import statistics
from collections.abc import Sequence

MIN_SHIFT = 0.25  # of the smaller median of the two sides: a busy core drifts a step by a fifth
SEPARATION = 5.0  # the medians' difference against its standard error
MIN_SIDE, MIN_SIDE_SHARE = 16, 0.05  # fewer points are a burst (the host busy for a few steps: stand-outs)
MAD_TO_SIGMA = 1.4826


def change_points(values: Sequence[float], floor: float = 0.0) -> list[int]:
    """The indices where `values` changed (each the first index after a change), in order; none for a series that
    held. `floor`: a shift smaller than this is no change, however clear (a thousandth of a millisecond in flight)."""
    side = max(MIN_SIDE, int(len(values) * MIN_SIDE_SHARE))
    cuts = sorted(_split(list(values), 0, len(values), side))
    while cuts:
        cuts = _refined(values, cuts, side)
        bounds = [0, *cuts, len(values)]
        sides = zip(bounds, bounds[1:], bounds[2:], strict=False)
        margins = [_margin(values[a:k], values[k:b], floor) for a, k, b in sides]
        weakest = min(range(len(cuts)), key=lambda i: margins[i])
        if margins[weakest] >= 1:
            break
        del cuts[weakest]
    return cuts


def _refined(values: Sequence[float], cuts: list[int], side: int) -> list[int]:
    """Each cut moved to the best split between its neighbours: a split made inside a short stretch could not reach
    the change it was near."""
    moved = list(cuts)
    for i in range(len(moved)):
        start = moved[i - 1] if i else 0
        end = moved[i + 1] if i + 1 < len(moved) else len(values)
        if end - start >= 2 * side:
            moved[i] = _best_split(values, start, end, side)
    return moved


def _best_split(values: Sequence[float], start: int, end: int, side: int) -> int:
    """The k in start+side..end-side where values[start:k] and values[k:end] lie closest to their medians."""
    left = _deviations(values[start:end])
    right = _deviations(values[start:end][::-1])[::-1]
    return start + min(range(side, end - start - side + 1), key=lambda k: left[k] + right[k])


def _deviations(values: Sequence[float]) -> list[float]:
    """[i] = how far values[:i] lie from their median, summed (the upper half's sum less the lower half's, which any
    point between the two middle values gives): each kept sorted as it grows."""
    ordered: list[float] = []
    found = [0.0]
    for value in values:
        bisect.insort(ordered, value)
        half = len(ordered) // 2
        found.append(sum(ordered[len(ordered) - half :]) - sum(ordered[:half]))
    return found


def _split(values: list[float], start: int, end: int, side: int) -> list[int]:
    """Every cut inside values[start:end] a search may need: its best split, then each side's, down to sides too short
    to split. A split that fails on its own is kept for the weighing: a stretch that ends leaves the same median on
    both sides of the run's first split, and only the splits inside them find its two ends."""
    if end - start < 2 * side:
        return []
    k = _best_split(values, start, end, side)
    return [*_split(values, start, k, side), k, *_split(values, k, end, side)]


def _margin(before: Sequence[float], after: Sequence[float], floor: float = 0.0) -> float:
    """How far the two sides' medians are apart against what a change needs (1 or more: a change)."""
    a, b = statistics.median(before), statistics.median(after)
    jitter = max(_jitter(before), _jitter(after))  # the noisier side's: a side quiet by chance proves nothing
    error = jitter * math.sqrt(1 / len(before) + 1 / len(after))
    needed = max(MIN_SHIFT * min(abs(a), abs(b)), SEPARATION * error, floor)
    if needed <= 0:
        return math.inf if a != b else 0.0
    return abs(b - a) / needed


def _jitter(values: Sequence[float]) -> float:
    middle = statistics.median(values)
    return MAD_TO_SIGMA * statistics.median(abs(v - middle) for v in values)
