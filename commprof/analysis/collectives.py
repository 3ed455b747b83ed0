"""Collectives table: per op and size, count, duration, algbw and busbw (nccl-tests convention)."""

from __future__ import annotations

import statistics
from collections import defaultdict

from commprof.results.report import CollectiveStats
from commprof.trace.model import Collective, RankTrace, Step
from commprof.trace.rules import busbw_factor


def in_windows(collectives: tuple[Collective, ...], windows: list[Step]) -> list[Collective]:
    return [c for c in collectives if any(w.start <= c.start < w.end for w in windows)]


def collective_stats(per_rank: list[tuple[RankTrace, list[Step]]]) -> list[CollectiveStats]:
    groups: dict[tuple, list[float]] = defaultdict(list)
    steps_seen: dict[tuple, int] = defaultdict(int)
    for rank, windows in per_rank:
        keys_here = set()
        for call in in_windows(rank.collectives, windows):
            key = (call.op, call.backend, call.dtype, call.nbytes, call.group_size)
            groups[key].append(call.end - call.start)
            keys_here.add(key)
        for key in keys_here:
            steps_seen[key] += len(windows)
    stats = []
    for (op, backend, dtype, nbytes, group_size), durations_us in groups.items():
        mean_us = statistics.fmean(durations_us)
        algbw = nbytes / (mean_us * 1e-6) / 1e9 if nbytes and mean_us > 0 else None
        factor = busbw_factor(op, group_size)
        stats.append(CollectiveStats(
            op=op, backend=backend, dtype=dtype, bytes=nbytes, group_size=group_size, count=len(durations_us),
            calls_per_step=len(durations_us) / steps_seen[(op, backend, dtype, nbytes, group_size)],
            mean_ms=mean_us / 1000.0, algbw_gbps=algbw,
            busbw_gbps=algbw * factor if algbw is not None and factor is not None else None,
        ))
    return sorted(stats, key=lambda s: (s.op, s.bytes or 0))
