"""The rounds of every sweep, tune and advise (`measure_rounds`), and which bucket sizes `commprof tune` tries: a
coarse log grid, then refinement around the best.

Stops after the coarse round when every setting is within the noise of the best one.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Hashable, Mapping, Sequence

from commprof.analysis.stats import real_speedup, speedup_ci
from commprof.kinds.ddp_buckets import one_per_layout
from commprof.results.sweep_record import MeasuredSetting
from commprof.settings import SettingOptions, setting_label

MAX_ROUNDS = 2
OWN = "own"  # a script's own setting among the tried caps


Measure = Callable[[list[SettingOptions]], dict[str, MeasuredSetting]]
Refine = Callable[[dict[str, MeasuredSetting], int], list[SettingOptions]]


def measure_rounds(
    first: Sequence[SettingOptions], measure: Measure, refine: Refine | None = None
) -> tuple[dict[str, MeasuredSetting], list[SettingOptions], int]:
    """The one round driver, whichever way the settings are measured (a built-in model's trainers in one launch:
    worker/sweep.py; a script's launches: commands/script_sweep.py): the pending settings measured (interleaved
    repeats, then profiled; `measure` may leave out a setting that builds another's buckets), then, when tuning,
    the next settings chosen from everything measured so far (`refine`, given the round just done, from 0), until
    none is left. Returns each setting's measurement by label, the settings measured in order, and the rounds."""
    results: dict[str, MeasuredSetting] = {}
    measured: list[SettingOptions] = []
    pending, rounds = list(first), 0
    while pending:
        new = measure(pending)
        results.update(new)
        measured += [s for s in pending if setting_label(s) in new]
        rounds += 1
        pending = refine(results, rounds - 1) if refine else []
    return results, measured, rounds


def round_mb(value: float) -> float:
    """Two significant figures: 11.18 -> 11.0, 2.236 -> 2.2."""
    digits = 1 - int(math.floor(math.log10(value)))
    return round(value, digits)


def within_noise(step_ms: Mapping[Hashable, list[float]], turn: int = 1) -> bool:
    """True when no tried setting is significantly slower or faster than the best one (`turn`: as speedup_ci's)."""
    best = min(step_ms, key=lambda mb: statistics.median(step_ms[mb]))
    return all(not real_speedup(speedup_ci(step_ms[mb], step_ms[best], turn=turn)) for mb in step_ms if mb != best)


def refine_around(best_mb: float, tried: list[float]) -> list[float]:
    """Geometric midpoints between the best size and its tried neighbours (or one step beyond an edge)."""
    ordered = sorted(tried)
    i = ordered.index(best_mb)
    lower = math.sqrt(ordered[i - 1] * best_mb) if i > 0 else best_mb / 2
    upper = math.sqrt(best_mb * ordered[i + 1]) if i + 1 < len(ordered) else best_mb * 2
    return [mb for mb in (round_mb(lower), round_mb(upper)) if mb not in tried]


def next_bucket_sizes(
    step_ms: dict[float, list[float]],
    round_index: int,
    layout_of: Callable[[float], tuple[int, ...]] | None = None,
    own: list[float] | None = None,
    own_layout: tuple[int, ...] | None = None,
    turn: int = 1,
    settled: bool | None = None,
) -> list[float]:
    """Bucket sizes for the next round; empty when tuning is done. With `layout_of` (a cap's buckets, as DDP builds
    them: analysis/ddp_buckets), a size that builds the buckets of one already tried is not tried again. `own`: the
    step times of a script's own setting (no cap applied; `own_layout`, its buckets): it counts in the noise, and
    the refinement is around the best cap. `turn`: a setting's steps per repeat (stats.speedup_ci). `settled`: decided
    by the caller (a script's launches: no cap beats its own setting), instead of from the steps."""
    tried: dict[Hashable, list[float]] = {mb: steps for mb, steps in step_ms.items()}
    if own is not None:
        tried[OWN] = own
    if settled is None:
        settled = within_noise(tried, turn)
    if round_index + 1 >= MAX_ROUNDS or not step_ms or settled:
        return []
    best = min(step_ms, key=lambda mb: statistics.median(step_ms[mb]))
    candidates = refine_around(best, list(step_ms))
    if layout_of is None:
        return candidates
    seen = {layout_of(mb) for mb in step_ms} | ({own_layout} if own_layout is not None else set())
    return list(one_per_layout(candidates, layout_of, seen).values())


def distinct_layouts(caps: list[float], keep: float, layout_of: Callable[[float], tuple[int, ...]]) -> list[float]:
    """One cap per layout DDP would build: `keep` (the baseline) first, then the others in order."""
    return [keep, *one_per_layout(caps, layout_of, (layout_of(keep),)).values()]
