"""Per-rank work done in the process that loaded the rank, so that only small records travel back.

Each rank's step breakdowns are computed where its trace was parsed. Beyond the first
MAX_DETAILED_RANKS ranks the interval lists are then dropped: the cross-rank analysis needs only
steps and collectives, and the timelines (typical step, timeline.json) show the first ranks. The
parent's memory then grows by a few kilobytes per rank, not by the size of each trace."""

from __future__ import annotations

import dataclasses

from commprof.analysis.breakdown import breakdown_step, step_windows
from commprof.analysis.whole_trace import hta_windows
from commprof.results.report import StepBreakdown
from commprof.trace.model import RankTrace

MAX_DETAILED_RANKS = 64


def digest_hta(rank: RankTrace) -> tuple[RankTrace, tuple[StepBreakdown, ...]]:
    """digest() of the rank as Holistic Trace Analysis sees it (one window per GPU rank)."""
    return digest(hta_windows(rank))


def digest(rank: RankTrace) -> tuple[RankTrace, tuple[StepBreakdown, ...]]:
    """The rank's step breakdowns, and the record itself, slimmed beyond the first ranks."""
    windows = step_windows(rank)
    breakdowns = tuple(breakdown_step(rank, w) for w in windows)
    if rank.rank < MAX_DETAILED_RANKS:  # also the ranks not yet numbered (-1)
        return rank, breakdowns
    return dataclasses.replace(rank, steps=tuple(windows), compute=(), communication=(), memory=(),
                               intervals_dropped=True), breakdowns
