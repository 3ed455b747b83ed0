"""Collectives table: per op and size, count, duration, algbw and busbw (nccl-tests convention)."""

from __future__ import annotations

import dataclasses
import statistics
from collections import defaultdict

from commprof.analysis.groups import label_of
from commprof.results.report import CollectiveStats, CollectiveStep
from commprof.trace.intervals import clip, total
from commprof.trace.model import Collective, RankTrace, Step
from commprof.trace.rules import (
    PHASES,
    PP_DIMENSIONS,
    TP_DIMENSIONS,
    TP_PURPOSE,
    ZERO_REDUNDANCY_PURPOSE,
    busbw_factor,
    pp_purpose,
    zero_purpose,
)


def in_windows(collectives: tuple[Collective, ...], windows: list[Step]) -> list[Collective]:
    return [c for c in collectives if any(w.start <= c.start < w.end for w in windows)]


def _step_of(call: Collective, windows: list[Step]) -> str | None:
    return next((w.name for w in windows if w.start <= call.start < w.end), None)


def collective_stats(per_rank: list[tuple[RankTrace, list[Step]]]) -> list[CollectiveStats]:
    groups: dict[tuple, list[float]] = defaultdict(list)
    hidden_us: dict[tuple, float] = defaultdict(float)  # of the calls' time, what ran beside computation
    by_step: dict[tuple, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    steps_seen: dict[tuple, int] = defaultdict(int)
    step_order: dict[str, int] = {}
    members: dict[tuple, set[tuple[int, ...]]] = defaultdict(set)  # per row, its groups' members
    for rank, windows in per_rank:
        for window in windows:
            step_order.setdefault(window.name, len(step_order))
        keys_here = set()
        for call in rank.collectives:
            step = _step_of(call, windows)
            if step is None:
                continue
            label, ranks = label_of(rank, call)
            purpose = call.purpose or _dimension_purpose(call, label, ranks, rank.rank)
            key = (call.op, call.backend, call.dtype, call.nbytes, call.group_size, call.phase, purpose, label)
            if ranks:
                members[key].add(ranks)
            groups[key].append(call.end - call.start)
            hidden_us[key] += total(clip(rank.compute, call.start, call.end))
            by_step[key][step].append(call.end - call.start)
            keys_here.add(key)
        for key in keys_here:
            steps_seen[key] += len(windows)
    stats = []
    for key, durations_us in groups.items():
        op, backend, dtype, nbytes, group_size, phase, purpose, label = key
        mean_ms, algbw, busbw = _speeds(statistics.fmean(durations_us), op, nbytes, group_size)
        steps = []
        for step, durations in sorted(by_step[key].items(), key=lambda item: step_order[item[0]]):
            step_ms, _, step_busbw = _speeds(statistics.fmean(durations), op, nbytes, group_size)
            steps.append(CollectiveStep(step, step_ms, step_busbw))
        stats.append(
            CollectiveStats(
                op=op,
                backend=backend,
                dtype=dtype,
                bytes=nbytes,
                group_size=group_size,
                count=len(durations_us),
                calls_per_step=len(durations_us) / steps_seen[key],
                mean_ms=mean_ms,
                algbw_gbps=algbw,
                busbw_gbps=busbw,
                steps=steps,
                phase=phase,
                purpose=purpose,
                hidden_pct=100 * hidden_us[key] / sum(durations_us) if sum(durations_us) > 0 else None,
                group=label,
                group_ranks=sorted(list(ranks) for ranks in members[key]),
            )
        )
    return sorted(
        stats,
        key=lambda s: (
            s.op,
            s.bytes or 0,
            _PHASE_ORDER.get(s.phase or "", len(_PHASE_ORDER)),
            s.purpose or "",
            s.group or "",
        ),
    )


_PHASE_ORDER = {phase: i for i, phase in enumerate(PHASES)}


def _speeds(
    mean_us: float, op: str, nbytes: int | None, group_size: int | None
) -> tuple[float, float | None, float | None]:
    """(mean ms, algbw GB/s, busbw GB/s) of calls that take `mean_us` on average."""
    algbw = nbytes / (mean_us * 1e-6) / 1e9 if nbytes and mean_us > 0 else None
    factor = busbw_factor(op, group_size)
    return mean_us / 1000.0, algbw, algbw * factor if algbw is not None and factor is not None else None


def with_zero_purposes(stats: list[CollectiveStats]) -> list[CollectiveStats]:
    """A DeepSpeed run's collectives, each named by what it is for in ZeRO (rules.ZERO_PURPOSE), where nothing in the
    trace named it already."""

    return [dataclasses.replace(s, purpose=s.purpose or zero_purpose(s.op, s.phase, s.bytes, s.dtype)) for s in stats]


def with_zero_redundancy_purposes(stats: list[CollectiveStats]) -> list[CollectiveStats]:
    """A run whose optimizer is torch's ZeroRedundancyOptimizer: the broadcasts in its step are its own (each rank
    steps its shard of the parameters and broadcasts it to the others)."""
    return [
        dataclasses.replace(s, purpose=ZERO_REDUNDANCY_PURPOSE)
        if s.purpose is None and s.op == "broadcast" and s.phase == "optimizer"
        else s
        for s in stats
    ]


def _dimension_purpose(call: Collective, label: str | None, members: tuple[int, ...], rank: int) -> str | None:
    """What a collective is for by the dimension it ran over: tensor parallelism's activations and their gradients;
    a pipeline's activations and gradients between stages (its stage: the rank's place in its stage group)."""
    if label in TP_DIMENSIONS:
        return TP_PURPOSE.get((call.phase or "", call.op))
    if label in PP_DIMENSIONS and call.op == "send_recv" and rank in members:
        return pp_purpose(call.sends, sorted(members).index(rank), len(members), call.phase)
    return None
