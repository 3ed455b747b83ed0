import random

from commprof.analysis.tune import next_bucket_sizes, refine_around, round_mb, within_noise


def noisy(center, n=20, seed=0):
    rng = random.Random(seed)
    return [center + rng.gauss(0, 1) for _ in range(n)]


def test_refines_between_the_best_and_its_neighbours():
    assert refine_around(5.0, [1.0, 5.0, 25.0, 100.0]) == [2.2, 11.0]
    assert refine_around(1.0, [1.0, 5.0, 25.0]) == [0.5, 2.2]
    assert refine_around(100.0, [25.0, 100.0]) == [50.0, 200.0]
    assert round_mb(0.3162) == 0.32


def test_stops_when_differences_are_noise():
    flat = {mb: noisy(100, seed=i) for i, mb in enumerate((1.0, 5.0, 25.0, 100.0))}
    assert within_noise(flat) and next_bucket_sizes(flat, 0) == []


def test_refines_after_a_clear_winner_and_stops_after_two_rounds():
    curve = {1.0: noisy(150), 5.0: noisy(100, seed=1), 25.0: noisy(120, seed=2), 100.0: noisy(160, seed=3)}
    assert next_bucket_sizes(curve, 0) == [2.2, 11.0]
    assert next_bucket_sizes(curve, 1) == []


def test_caps_that_build_the_same_buckets_are_tried_once():
    """A model of four 8 MiB parameters: 25, 50 and 100 all build one 32 MiB bucket (8+8+8 < 25), 1 and 5 four
    of 8 MiB: the coarse grid keeps one cap of each, and the refinement around 25 leaves out 50."""
    from commprof.analysis.tune import distinct_layouts, next_bucket_sizes
    from commprof.kinds.ddp_buckets import MB, layout

    sizes = [8 * MB] * 4
    layout_of = lambda mb: layout(sizes, mb)  # noqa: E731
    assert distinct_layouts([1.0, 5.0, 25.0, 100.0], 25.0, layout_of) == [25.0, 1.0]
    step_ms = {1.0: [60.0, 61, 59, 60], 5.0: [50.0, 51, 49, 50], 25.0: [40.0, 41, 39, 40], 100.0: [40.5, 40, 41, 40]}
    assert next_bucket_sizes(step_ms, 0) == [11.0, 50.0]
    assert next_bucket_sizes(step_ms, 0, layout_of) == [11.0]  # 50 builds 25's one bucket; 11 two of 16 MiB
