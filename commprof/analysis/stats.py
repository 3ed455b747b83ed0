"""Statistics for comparing settings on noisy machines: medians with bootstrap confidence intervals."""

from __future__ import annotations

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


def _bounds(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    tail = (1 - CONFIDENCE) / 2
    return ordered[int(tail * len(ordered))], ordered[min(len(ordered) - 1, int((1 - tail) * len(ordered)))]


def median_ci(values: list[float], seed: int = 0) -> Estimate:
    """Median and a 95% percentile-bootstrap interval (deterministic for a given seed)."""
    rng = random.Random(seed)
    n = len(values)
    boots = [statistics.median(rng.choices(values, k=n)) for _ in range(RESAMPLES)]
    return Estimate(statistics.median(values), *_bounds(boots))


def speedup_ci(baseline: list[float], candidate: list[float], seed: int = 0) -> Estimate:
    """median(baseline) / median(candidate), with a bootstrap interval: > 1 means candidate is faster."""
    rng = random.Random(seed)
    boots = [statistics.median(rng.choices(baseline, k=len(baseline))) /
             statistics.median(rng.choices(candidate, k=len(candidate))) for _ in range(RESAMPLES)]
    return Estimate(statistics.median(baseline) / statistics.median(candidate), *_bounds(boots))


def difference_ci(before: list[float], after: list[float], seed: int = 0) -> Estimate:
    """median(after) - median(before), with a bootstrap interval: excludes 0 when the change is real."""
    rng = random.Random(seed)
    boots = [statistics.median(rng.choices(after, k=len(after))) -
             statistics.median(rng.choices(before, k=len(before))) for _ in range(RESAMPLES)]
    return Estimate(statistics.median(after) - statistics.median(before), *_bounds(boots))


def launches_difference_ci(before: list[list[float]], after: list[list[float]], seed: int = 0) -> Estimate:
    """median(after) - median(before) over launches of each side (each a list of per-step values), with a two-level
    bootstrap: launches resampled, then the steps of each launch picked. The interval holds the spread between
    launches only when a side has two or more."""
    rng = random.Random(seed)

    def resampled_median(launches: list[list[float]]) -> float:
        return statistics.median([v for launch in rng.choices(launches, k=len(launches))
                                  for v in rng.choices(launch, k=len(launch))])

    boots = [resampled_median(after) - resampled_median(before) for _ in range(RESAMPLES)]
    pooled = [statistics.median([v for launch in side for v in launch]) for side in (before, after)]
    return Estimate(pooled[1] - pooled[0], *_bounds(boots))
