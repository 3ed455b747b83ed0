import random
import statistics

import pytest

from commprof.analysis.stats import (
    difference_ci,
    mean_ci,
    median_ci,
    real_speedup,
    rerun_interval,
    speedup_ci,
    stratified_mean_ci,
)


def test_median_interval_contains_the_median_and_shrinks_with_more_data():
    rng = random.Random(1)
    few = [100 + rng.gauss(0, 5) for _ in range(10)]
    many = [100 + rng.gauss(0, 5) for _ in range(400)]
    small, large = median_ci(few), median_ci(many)
    assert small.low <= small.value <= small.high
    assert (large.high - large.low) < (small.high - small.low)
    assert large.low < 100 < large.high


def test_speedup_detects_a_real_difference_and_not_noise():
    rng = random.Random(2)
    base = [100 + rng.gauss(0, 3) for _ in range(30)]
    faster = [80 + rng.gauss(0, 3) for _ in range(30)]
    same = [100 + rng.gauss(0, 3) for _ in range(30)]
    gain = speedup_ci(base, faster)
    assert 1.2 < gain.value < 1.3 and gain.excludes(1.0)
    assert not speedup_ci(base, same).excludes(1.0)


def test_few_samples_a_side_compare_the_medians_own_intervals():
    """4 steps a side: each median's interval is its samples' range (median_ci), so 10-13 against 8-11 is 11.5 / 9.5
    with [10 / 11, 13 / 8], and a difference of -2 with [8 - 13, 11 - 10]: no claim, where the bootstrap of the same
    steps twice over (8 a side) claims one."""
    base, faster = [10.0, 11.0, 12.0, 13.0], [8.0, 9.0, 10.0, 11.0]
    gain = speedup_ci(base, faster)
    assert (gain.value, gain.low, gain.high) == pytest.approx((11.5 / 9.5, 10 / 11, 13 / 8))
    change = difference_ci(base, faster)
    assert (change.value, change.low, change.high) == pytest.approx((-2.0, -5.0, 1.0))
    assert speedup_ci(base * 2, faster * 2).excludes(1.0)  # the bootstrap, at 8 a side, does exclude it
    apart = speedup_ci([20.0, 21.0, 22.0, 23.0], faster)  # every baseline step slower than every candidate's
    assert apart.low == pytest.approx(20 / 11) and apart.excludes(1.0)


def test_welch_interval_between_launches_by_hand():
    """Launches 1, 3 against 5, 7: difference 4, each side's variance 2 over 2 launches, standard error sqrt(2),
    Welch's degrees of freedom 4 / (1 + 1) = 2, t = 4.303: 4 +- 6.085, no claim; a level shift (identical spread)
    is no error: 10, 10 against 12, 12 is exactly 2."""
    from commprof.analysis.stats import launches_difference_ci

    got = launches_difference_ci([1.0, 3.0], [5.0, 7.0])
    assert (got.value, got.low, got.high) == pytest.approx((4.0, 4.0 - 4.303 * 2**0.5, 4.0 + 4.303 * 2**0.5))
    same = launches_difference_ci([10.0, 10.0], [12.0, 12.0])
    assert (same.value, same.low, same.high) == (2.0, 2.0, 2.0)


def test_median_interval_is_the_order_statistics_by_hand():
    """n = 10: [x(2), x(9)] misses the median with probability 2·11/1024 = 2.1%; [x(3), x(8)] would miss it with
    2·56/1024 = 10.9%. n = 6: even [x(2), x(5)] misses it 21.9% of the time, so the range: [x(1), x(6)], 3.1%."""
    ten = median_ci([float(v) for v in (7, 3, 9, 1, 10, 5, 2, 8, 4, 6)])
    assert (ten.value, ten.low, ten.high) == (5.5, 2.0, 9.0)
    six = median_ci([40.1, 39.8, 40.6, 40.0, 40.3, 43.0])
    assert (six.low, six.high) == (39.8, 43.0)


def test_a_rerun_interval_is_sqrt2_wider_on_each_side():
    """A rerun's value has its own error: the difference of two launches' values spreads sqrt(2) times as far as one's.
    A ratio widens on a log scale, so it never crosses zero."""
    from commprof.analysis.stats import rerun_interval
    from commprof.results.common import Estimate

    got = rerun_interval(Estimate(10.0, 8.0, 11.0))
    assert (got.low, got.high) == pytest.approx((10 - 2 * 2**0.5, 10 + 2**0.5))
    ratio = rerun_interval(Estimate(1.2, 0.6, 2.4), ratio=True)
    assert (ratio.low, ratio.high) == pytest.approx((1.2 * 0.5**2**0.5, 1.2 * 2**2**0.5))


def _stalls_every_10th_step(rng: random.Random) -> list[list[float]]:
    """One run's waits: 6 stalls of about 200 ms among 60 steps, the other steps' waits under a millisecond."""
    return [[rng.gauss(200, 3) for _ in range(6)], [rng.expovariate(5) for _ in range(54)]]


def test_stalls_on_a_schedule_keep_their_count_and_the_interval_holds_reruns():
    """A rerun of a job that stalls every 10th step stalls as often: its mean moves by the stalls' sizes only. Over
    100 runs, the stratified interval of a run, widened for a rerun, holds 95% of 400 reruns' means on average (a
    prediction interval's promise is on average over the run it comes from); the plain bootstrap, which lets the
    count of stalls vary, is many times wider than the spread of the reruns."""
    rng = random.Random(3)
    reruns = [sum(map(sum, _stalls_every_10th_step(rng))) / 60 for _ in range(400)]
    held = []
    for _ in range(100):
        groups = _stalls_every_10th_step(rng)
        one = rerun_interval(stratified_mean_ci(groups))
        assert one.low < one.value < one.high and one.value == pytest.approx(sum(map(sum, groups)) / 60)
        held.append(sum(one.low <= mean <= one.high for mean in reruns) / len(reruns))
    assert statistics.fmean(held) >= 0.92
    spread = max(reruns) - min(reruns)
    plain = mean_ci(groups[0] + groups[1])
    assert plain.high - plain.low > 5 * spread and one.high - one.low < 3 * spread


def test_a_scripts_launches_are_resampled_whole():
    """Five launches of four steps a side, the steps of a launch alike: one of the baseline's launches ran as fast as
    the candidate's and one of the candidate's as slow as the baseline's. Resampling steps claims 1.38x (its
    interval 1.22 to 1.39 excludes 1); resampling launches, as a script's sweep does, finds the launches disagree
    (its interval reaches 1), and claims nothing."""

    def steps(*launch_means: float) -> list[float]:
        return [mean + d for mean in launch_means for d in (-0.1, 0.0, 0.05, 0.1)]

    baseline, candidate = steps(14, 14, 13, 10, 14), steps(10, 10, 13, 10, 11)
    by_step = speedup_ci(baseline, candidate)
    by_launch = speedup_ci(baseline, candidate, turn=4)
    assert by_step.value == by_launch.value == pytest.approx(13.95 / 10.1375, rel=1e-3)
    assert real_speedup(by_step) and by_step.low > 1.2
    assert not real_speedup(by_launch) and by_launch.low <= 1.0
    assert difference_ci(baseline, candidate).high < 0 <= difference_ci(baseline, candidate, turn=4).high
