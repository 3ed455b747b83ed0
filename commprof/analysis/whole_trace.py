"""Whole-trace figures in Holistic Trace Analysis's convention, for comparison with HTA.

HTA measures one window per rank: from the first GPU kernel to the last kernel launched before
the last ProfilerStep began (it drops the last, possibly incomplete, iteration), and reports
overlap as |comm ∩ compute| / |comm|. commprof's report uses per-step windows instead; see
docs/semantics.md for why and how far apart the two are on real traces.
"""

from __future__ import annotations

from dataclasses import dataclass

from commprof.analysis.intervals import clip, intersect, merge, total
from commprof.trace.model import RankTrace


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


def whole_trace(rank: RankTrace) -> WholeTrace:
    everything = merge([*rank.compute, *rank.communication, *rank.memory])
    start, end = rank.launched_before_last_step or (everything[0][0], everything[-1][1])
    busy = clip(everything, start, end)
    compute = clip(rank.compute, start, end)
    comm = clip(rank.communication, start, end)
    window = end - start
    idle = window - total(busy)
    comm_total = total(comm)
    overlap = 100 * total(intersect(compute, comm)) / comm_total if comm_total else None
    return WholeTrace(window, total(compute), idle, window - total(compute) - idle, overlap)
