"""Holistic Trace Analysis's convention, for comparison with HTA (`commprof analyze --windows hta`).

HTA measures one window per GPU rank: from the first device event to the end of the last one it keeps,
keeping only the device work launched (in the trace) before the last ProfilerStep began. It reports idle,
compute and non-compute as shares of that window, and overlap as |comm ∩ compute| / |comm|. commprof's report
uses per-step windows instead; docs/semantics.md says why and how far apart the two are on real traces.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from commprof.analysis.breakdown import breakdown_step
from commprof.trace.model import RankTrace, Step

HTA_WINDOW = "hta"


@dataclass(frozen=True)
class WholeTrace:
    window_us: float
    compute_us: float
    idle_us: float
    non_compute_us: float
    overlap_pct: float | None  # share of communication time overlapped with computation

    @property
    def compute_pct(self) -> float:
        return 100 * self.compute_us / self.window_us

    @property
    def idle_pct(self) -> float:
        return 100 * self.idle_us / self.window_us

    @property
    def non_compute_pct(self) -> float:
        return 100 * self.non_compute_us / self.window_us


def hta_windows(rank: RankTrace) -> RankTrace:
    """The rank as HTA sees it: one window and only the device work HTA keeps (memcpy, memset and syncs as
    memory). CPU ranks are returned as they are."""
    if rank.hta is None:
        return rank
    view = rank.hta
    return dataclasses.replace(
        rank,
        steps=(Step(HTA_WINDOW, *view.window),),
        compute=view.compute,
        communication=view.communication,
        memory=view.other,
        empty_steps=(),
    )


def whole_trace(rank: RankTrace) -> WholeTrace:
    one = hta_windows(rank)
    (window,) = one.steps
    b = breakdown_step(one, window)
    window_us, compute_us, idle_us = b.window_ms * 1000, b.compute_ms * 1000, b.idle_ms * 1000
    overlap = 100 * b.overlap_ms / b.comm_ms if b.comm_ms else None
    return WholeTrace(window_us, compute_us, idle_us, window_us - compute_us - idle_us, overlap)
