"""How often the change-point search cuts a series that held, and finds one that did not, on synthetic step series
(seeded, 200 each, 120 steps): steady steps with 30% lognormal noise; steady steps with 15% of them 1.5-4x slow
spikes; a stretch 3x slower in steps 40-79; a start-up twice as slow for 20 steps (analysis/change_point.py).

    python benchmarks/measure/change_point_noise.py"""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, when run as a file
from commprof.analysis.change_point import change_points  # noqa: E402

SERIES = 200


def near(found: list[int], truth: list[int]) -> bool:
    return len(found) == len(truth) and all(abs(f - t) <= 3 for f, t in zip(found, truth, strict=True))


def main() -> int:
    rng = random.Random(2)
    noisy = sum(bool(change_points([15 * rng.lognormvariate(0, 0.3) for _ in range(120)])) for _ in range(SERIES))
    spiky = 0
    for _ in range(SERIES):
        steps = [
            15 * (1 + rng.gauss(0, 0.05)) * (rng.uniform(1.5, 4) if rng.random() < 0.15 else 1) for _ in range(120)
        ]
        spiky += bool(change_points(steps))
    stretch = sum(
        near(change_points([(45 if 40 <= i < 80 else 15) * rng.lognormvariate(0, 0.3) for i in range(120)]), [40, 80])
        for _ in range(SERIES)
    )
    start_up = sum(
        near(change_points([(30 if i < 20 else 15) * rng.lognormvariate(0, 0.3) for i in range(120)]), [20])
        for _ in range(SERIES)
    )
    print(f"cut where it held: {noisy} of {SERIES} noisy series, {spiky} of {SERIES} spiky ones")
    print(f"found: the stretch in {stretch} of {SERIES}, the start-up in {start_up} of {SERIES}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
