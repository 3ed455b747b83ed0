"""Intervals that hold the noise between launches, for a script's sweep, tune and advise.

The launch is the unit that replicates: its steps share its placement on cores, its allocator, its threads and
what else ran then, so an interval over steps holds the noise between steps and not between launches (issue 60:
one launch of a setting ran 107 ms a step, another 144). Each launch is summed up by the median of its timed steps,
whose own noise is in that median's spread across launches (a two-stage sample: the spread of the launches' values
holds both stages). A script's settings run in interleaved rounds (A B C, A B C), each round's launches side by
side, so two settings are compared round by round: the ratio of their launches in each round shared, on a log
scale, with Student's t over those rounds. One setting's value is the geometric mean of its launches, so that the
ratio of two settings' values over the same rounds is the speedup's value."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence

from commprof.analysis.stats import T_975, real_speedup
from commprof.results.common import PRACTICAL_SHARE, Estimate

Launches = Mapping[str, float]  # a setting's launches: the round each ran in -> the median of its timed steps


def launch_values(launches: Sequence[Sequence[float]], rounds: Sequence[str]) -> dict[str, float]:
    """Each launch's value, by its round: the median of its timed steps (a launch with none is left out)."""
    return {key: statistics.median(steps) for key, steps in zip(rounds, launches, strict=True) if steps}


def _t(count: int) -> float:
    """Student's t, two-sided 95%, for `count` values (count - 1 degrees of freedom)."""
    return T_975[count - 2] if count - 1 <= len(T_975) else 1.96


def _mean_interval(values: Sequence[float]) -> tuple[float, float, float]:
    """The mean with its 95% t interval; a single value is its own interval (nothing to say of its spread)."""
    mean = statistics.fmean(values)
    if len(values) < 2:
        return mean, mean, mean
    half = _t(len(values)) * statistics.stdev(values) / math.sqrt(len(values))
    return mean, mean - half, mean + half


def setting_step(launches: Launches) -> Estimate:
    """A setting's step: the geometric mean of its launches' values, with the 95% interval of where the mean of
    launches like them lies."""
    mean, low, high = _mean_interval([math.log(v) for v in launches.values()])
    return Estimate(math.exp(mean), math.exp(low), math.exp(high))


def shared_rounds(baseline: Launches, candidate: Launches) -> list[str]:
    return [key for key in candidate if key in baseline]


def paired_speedup(baseline: Launches, candidate: Launches) -> Estimate:
    """baseline / candidate (> 1: the candidate is faster) over the rounds both ran in: the geometric mean of each
    round's ratio, with Student's t over the rounds."""
    ratios = [math.log(baseline[key] / candidate[key]) for key in shared_rounds(baseline, candidate)]
    if len(ratios) < 2:  # one pair tells nothing of the noise between launches
        return Estimate(math.exp(ratios[0]) if ratios else 1.0, 0.0, math.inf)
    mean, low, high = _mean_interval(ratios)
    return Estimate(math.exp(mean), math.exp(low), math.exp(high))


def paired_gain_ms(baseline: Launches, candidate: Launches) -> Estimate:
    """baseline - candidate in ms per step (> 0: the candidate is faster) over the rounds both ran in, with Student's
    t over the rounds."""
    return Estimate(*_mean_interval([baseline[key] - candidate[key] for key in shared_rounds(baseline, candidate)]))


def relative_speedup(baseline: Launches, a: Launches, b: Launches) -> Estimate:
    """a / b (> 1: b is faster): paired where they ran in the same rounds (two or more); else each against the
    baseline of its own rounds (a tune's refined sizes ran in a later round than the coarse ones), the two log
    ratios' difference with Welch's interval."""
    if len(shared_rounds(a, b)) >= 2:
        return paired_speedup(a, b)
    gains = [
        [math.log(baseline[key] / mine[key]) for key in shared_rounds(baseline, mine)] for mine in (a, b)
    ]  # each one's log speedup over the baseline, round by round
    if min(map(len, gains)) < 2:
        return Estimate(1.0, 0.0, math.inf)  # nothing to tell them apart by
    difference = statistics.fmean(gains[1]) - statistics.fmean(gains[0])
    var_a, var_b = (statistics.variance(g) / len(g) for g in gains)
    se = math.sqrt(var_a + var_b)
    if se == 0:
        return Estimate(math.exp(difference), math.exp(difference), math.exp(difference))
    df = (var_a + var_b) ** 2 / (var_a**2 / (len(gains[0]) - 1) + var_b**2 / (len(gains[1]) - 1))
    t = T_975[int(df) - 1] if 1 <= int(df) <= len(T_975) else (T_975[0] if int(df) < 1 else 1.96)
    return Estimate(math.exp(difference), math.exp(difference - t * se), math.exp(difference + t * se))


BEATS_BY = 1 / (1 - PRACTICAL_SHARE)  # a speedup that takes PRACTICAL_SHARE off the step


def beats(speedup: Estimate) -> bool:
    """Faster beyond the noise between launches and by PRACTICAL_SHARE of the step or more."""
    return speedup.value > 1 and real_speedup(speedup)


def decided(speedup: Estimate) -> bool:
    """Whether more launches can change the answer: it beats the baseline, or its interval rules out a gain of
    PRACTICAL_SHARE (more launches narrow the interval around a value that is no claim)."""
    return beats(speedup) or speedup.high < BEATS_BY


def spread_pct(speedups: Sequence[Estimate]) -> float:
    """How far from the baseline's step the settings' intervals reach, in percent: every setting lies within
    ±this of it, as far as the launches can tell."""
    return 100 * max((max(s.high - 1, 1 - s.low) for s in speedups), default=0.0)


def undecided(launches: Mapping[str, Launches], baseline: str) -> list[str]:
    """The settings whose comparison with the baseline more launches may still change (decided: neither)."""
    return [
        label
        for label, mine in launches.items()
        if label != baseline and not decided(paired_speedup(launches[baseline], mine))
    ]
