"""DDP's bucket layouts: commprof's rule against torch's own assignment function, and settings merged by layout."""

from __future__ import annotations

import random

import pytest

from commprof.kinds.ddp_buckets import MB, distinct_caps, layout, limits


def torch_layout(parameter_bytes: list[int], cap_mb: float | None) -> tuple[int, ...]:
    """What DDP builds, from DDP's own function, parameters walked in reverse registration order as DDP does."""
    torch = pytest.importorskip("torch")
    import torch.distributed as dist

    params = [torch.empty(n // 4, dtype=torch.float32) for n in reversed(parameter_bytes)]
    groups, _ = dist._compute_bucket_assignment_by_size(params, limits(cap_mb), tensor_indices=list(range(len(params))))
    return tuple(sum(params[i].numel() * 4 for i in group) for group in groups)


def test_default_has_a_1mb_first_bucket_and_an_explicit_25_does_not():
    # registration order: a 24 MiB layer, then a 4 MiB one, then a 4 KiB bias (ready first)
    sizes = [24 * MB, 4 * MB, 4096]
    assert layout(sizes, None) == (4 * MB + 4096, 24 * MB)  # first bucket closes past 1 MiB, then the 25 MiB cap
    assert layout(sizes, 25) == (28 * MB + 4096,)  # under an explicit 25 the first bucket takes the cap too
    assert layout(sizes, 50) == (28 * MB + 4096,)  # so 25 and 50 are the same setting here
    assert layout(sizes, 2) == (4 * MB + 4096, 24 * MB)  # a parameter larger than the cap is a bucket of its own


@pytest.mark.parametrize("seed", range(40))
def test_layout_equals_ddps_own_assignment(seed):
    rng = random.Random(seed)
    sizes = [4 * rng.choice([1, 16, 1024, 65536, 262144, 1 << 20, 3 << 20]) for _ in range(rng.randint(1, 30))]
    for cap in (None, 0.5, 1, 2, 5, 10, 25, 50, 400):
        assert layout(sizes, cap) == torch_layout(sizes, cap), (sizes, cap)


def test_caps_with_the_same_layout_are_one_setting_and_todays_is_left_out():
    sizes = [8 * MB] * 4  # 32 MiB of gradients in four 8 MiB layers
    now = layout(sizes, 25)  # (32 MiB,): 8+8+8 = 24 < 25, so one bucket
    assert now == (32 * MB,)
    caps = distinct_caps(sizes, (1, 2, 5, 10, 25, 50, 100), now)
    assert caps == {1: (8 * MB,) * 4, 10: (16 * MB, 16 * MB)}  # 1, 2, 5 build the same; 25, 50, 100 build today's
    # (these layouts and caps in words: test_render_model_words.py)
