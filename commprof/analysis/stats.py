"""Statistics for comparing settings on noisy machines: medians with bootstrap intervals, widened to hold a rerun.

Where a claim rests on samples taken together in one stretch of one launch (a run's profiled window and its link
probe; each backend's own launch in compare), their interval says where this launch's value lies, and a rerun's
value has an error of its own: two launches' values differ by up to sqrt(2) times one's. Those claims use that
wider interval (`rerun_interval`), which holds where a rerun's value falls 95% of the time. Sweep, tune and
advise interleave their settings in rounds over the launch (a script's: a launch per turn) and resample whole turns,
so their intervals hold how the host moves from turn to turn. docs/semantics.md ("Claims") has the launches that
checked it."""

from __future__ import annotations

import math
import random
import statistics

from commprof.results.common import PRACTICAL_SHARE, Estimate

RESAMPLES = 2000
CONFIDENCE = 0.95


def real_gain(gain: Estimate, step_ms: float) -> bool:
    """A gain in ms per step worth a claim: its interval excludes 0 and it is PRACTICAL_SHARE of the step or more."""
    return gain.low > 0 and gain.value >= PRACTICAL_SHARE * step_ms


def real_change(change: Estimate, base: float, share: float = PRACTICAL_SHARE) -> bool:
    """A difference of medians (either way) worth a claim, against the value it changed from: at least `share` of it
    (PRACTICAL_SHARE, or more where something else moves the values that much: commprof diff)."""
    return change.excludes(0.0) and abs(change.value) >= max(share, PRACTICAL_SHARE) * abs(base)


def real_speedup(speedup: Estimate) -> bool:
    """A speedup (baseline / candidate, either way) worth a claim: its interval excludes 1 and it changes the step
    by PRACTICAL_SHARE or more."""
    return speedup.excludes(1.0) and abs(1 - 1 / speedup.value) >= PRACTICAL_SHARE


RERUN_WIDENING = math.sqrt(2)


def rerun_interval(estimate: Estimate, ratio: bool = False) -> Estimate:
    """The interval in which a rerun's value falls: each half-width times sqrt(2), on a log scale for a ratio."""
    value, low, high = estimate.value, estimate.low, estimate.high
    if ratio and min(value, low, high) > 0:
        return Estimate(value, value * (low / value) ** RERUN_WIDENING, value * (high / value) ** RERUN_WIDENING)
    return Estimate(value, value - (value - low) * RERUN_WIDENING, value + (high - value) * RERUN_WIDENING)


def _bounds(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    tail = (1 - CONFIDENCE) / 2
    return ordered[int(tail * len(ordered))], ordered[min(len(ordered) - 1, int((1 - tail) * len(ordered)))]


def median_ci(values: list[float]) -> Estimate:
    """Median and its distribution-free 95% interval: the order statistics j and n+1-j, with j the largest whose
    binomial tail P(Bin(n, 1/2) < j) is at most 2.5% (every sample's range below 6 samples). Exact for any
    distribution, where a percentile bootstrap of few samples is too narrow."""
    ordered = sorted(values)
    n = len(ordered)
    j = 1  # [x(j), x(n+1-j)] misses the median with probability 2·P(Bin(n, 1/2) <= j-1)
    while j < (n + 1) // 2 and _binomial_cdf(n, j) <= (1 - CONFIDENCE) / 2:
        j += 1
    return Estimate(statistics.median(ordered), ordered[j - 1], ordered[n - j])


def _binomial_cdf(n: int, k: int) -> float:
    """P(Bin(n, 1/2) <= k)."""
    return sum(math.comb(n, i) for i in range(k + 1)) / 2**n


FEW_SAMPLES = 6  # below it a median's interval is every sample's range (median_ci): a bootstrap's is too narrow


def speedup_ci(baseline: list[float], candidate: list[float], seed: int = 0, turn: int = 1) -> Estimate:
    """median(baseline) / median(candidate), with a bootstrap interval: > 1 means candidate is faster. With fewer
    than FEW_SAMPLES on a side, the ratio of the two medians' own intervals (a sweep of 2 rounds of 2 steps claimed
    1.26x [1.02, 1.89] from a bootstrap of 4 samples a side, where two sweeps of 16 found no difference). `turn`: the
    steps of one turn of a setting, consecutive in the lists (a sweep's repeat; for a script, a turn of its own),
    resampled together, so that the interval holds the spread from turn to turn and not only that of one turn's
    steps."""
    if turn <= 1 and min(len(baseline), len(candidate)) < FEW_SAMPLES:
        base, cand = median_ci(baseline), median_ci(candidate)
        return Estimate(base.value / cand.value, base.low / cand.high, base.high / cand.low)
    rng = random.Random(seed)
    boots = [
        statistics.median(_resampled(baseline, rng, turn)) / statistics.median(_resampled(candidate, rng, turn))
        for _ in range(RESAMPLES)
    ]
    return Estimate(statistics.median(baseline) / statistics.median(candidate), *_bounds(boots))


def _resampled(values: list[float], rng: random.Random, turn: int) -> list[float]:
    """A bootstrap sample: of the values, or of whole turns (`turn` consecutive values each)."""
    if turn <= 1:
        return rng.choices(values, k=len(values))
    turns = [values[i : i + turn] for i in range(0, len(values), turn)]
    return [value for chosen in rng.choices(turns, k=len(turns)) for value in chosen]


def mean_ci(values: list[float], seed: int = 0) -> Estimate:
    """The mean with a percentile bootstrap interval: for a cost that a few samples carry (a stall every 10th step),
    where the median of the samples is 0."""
    rng = random.Random(seed)
    boots = [statistics.fmean(rng.choices(values, k=len(values))) for _ in range(RESAMPLES)]
    return Estimate(statistics.fmean(values), *_bounds(boots))


def difference_ci(before: list[float], after: list[float], seed: int = 0, turn: int = 1) -> Estimate:
    """median(after) - median(before), with a bootstrap interval: excludes 0 when the change is real. With fewer
    than FEW_SAMPLES on a side, the difference of the two medians' own intervals; `turn` as speedup_ci's."""
    if turn <= 1 and min(len(before), len(after)) < FEW_SAMPLES:
        was, now = median_ci(before), median_ci(after)
        return Estimate(now.value - was.value, now.low - was.high, now.high - was.low)
    rng = random.Random(seed)
    boots = [
        statistics.median(_resampled(after, rng, turn)) - statistics.median(_resampled(before, rng, turn))
        for _ in range(RESAMPLES)
    ]
    return Estimate(statistics.median(after) - statistics.median(before), *_bounds(boots))


# Student's t, two-sided 95%: the quantile for 1..30 degrees of freedom (the normal's beyond)
T_975 = (
    12.706,
    4.303,
    3.182,
    2.776,
    2.571,
    2.447,
    2.365,
    2.306,
    2.262,
    2.228,
    2.201,
    2.179,
    2.160,
    2.145,
    2.131,
    2.120,
    2.110,
    2.101,
    2.093,
    2.086,
    2.080,
    2.074,
    2.069,
    2.064,
    2.060,
    2.056,
    2.052,
    2.048,
    2.045,
    2.042,
)


def launches_difference_ci(before: list[float], after: list[float]) -> Estimate:
    """mean(after) - mean(before) of per-launch values (two or more a side), with Welch's 95% interval: the
    spread between launches is the noise. Its degrees of freedom are rounded down, which widens the interval."""
    var_a, var_b = statistics.variance(after) / len(after), statistics.variance(before) / len(before)
    difference = statistics.fmean(after) - statistics.fmean(before)
    se = (var_a + var_b) ** 0.5
    if se == 0:
        return Estimate(difference, difference, difference)
    df = (var_a + var_b) ** 2 / (var_a**2 / (len(after) - 1) + var_b**2 / (len(before) - 1))
    t = T_975[int(df) - 1] if int(df) <= len(T_975) else 1.96
    return Estimate(difference, difference - t * se, difference + t * se)


def stratified_mean_ci(groups: list[list[float]]) -> Estimate:
    """The mean over every group's values with a 95% interval in which each group keeps its count: for a cost whose
    few large samples come on a schedule (a stall every 10th step), so that a rerun has as many of them and only
    their sizes and the other samples move. `mean_ci` of the same values lets the count of large samples vary as
    well. Student's t with Welch-Satterthwaite degrees of freedom: a bootstrap of six stalls is too narrow."""
    groups = [g for g in groups if g]
    count = sum(len(g) for g in groups)
    mean = sum(sum(g) for g in groups) / count
    parts = [(len(g) * statistics.variance(g) / count**2, len(g) - 1) for g in groups if len(g) > 1]
    var = sum(v for v, _ in parts)
    if var == 0:
        return Estimate(mean, mean, mean)
    df = var**2 / sum(v**2 / dof for v, dof in parts)
    t = T_975[int(df) - 1] if int(df) <= len(T_975) else 1.96
    return Estimate(mean, mean - t * var**0.5, mean + t * var**0.5)
