import random

from commprof.analysis.stats import median_ci, speedup_ci


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
