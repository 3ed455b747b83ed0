"""DDP's gradient buckets seen in a trace: when each became ready, when its all-reduce ran.

`ready` is when the bucket's last gradient was computed: on CPU traces when DDP launched the
all-reduce (it does so at once), on GPU traces when the device had finished the work launched
before it (trace.classify maps CPU times onto the GPU's clock through the launches). From the same timeline come
the figures DDP measures itself (`_get_ddp_logging_data`): backward compute time (backward
start to the last bucket ready), backward communication time (first bucket ready to the end
of finalize_backward, which copies the reduced buckets back into the gradients) and their
overlap (first to last bucket ready).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from commprof.results.report import BucketEvent
from commprof.trace.model import Collective, RankTrace

GRADIENT_OPS = frozenset({"all_reduce"})


def ready_at(collective: Collective) -> float:
    """When the collective's gradients were ready (us); for the collectives kept because they have the time."""
    assert collective.ready is not None
    return collective.ready


@dataclass(frozen=True)
class BackwardTimes:
    compute_ms: float
    comm_ms: float
    overlap_ms: float


def bucket_timelines(rank: RankTrace) -> list[list[BucketEvent]]:
    """Per profiled step with a backward pass: its buckets, times relative to the backward start."""
    return [timeline for timeline, _ in _timelines_with_finalize(rank)]


def _timelines_with_finalize(rank: RankTrace) -> list[tuple[list[BucketEvent], float | None]]:
    """Each step's buckets, and when DDP finished copying them back (ms from the backward start)."""
    timelines = []
    ends = rank.backward_ends or (None,) * len(rank.steps)
    for step, backward, finalized in zip(rank.steps, rank.backward_starts, ends, strict=False):
        if backward is None:
            continue
        calls = sorted(
            (
                c
                for c in rank.collectives
                if c.op in GRADIENT_OPS and step.start <= c.start < step.end and c.ready is not None
            ),
            key=ready_at,
        )
        if calls:
            timelines.append(
                (
                    [
                        BucketEvent(
                            i,
                            c.nbytes,
                            (ready_at(c) - backward) / 1000,
                            (c.start - backward) / 1000,
                            (c.end - backward) / 1000,
                        )
                        for i, c in enumerate(calls)
                    ],
                    (finalized - backward) / 1000 if finalized is not None else None,
                )
            )
    return timelines


def backward_times(rank: RankTrace) -> BackwardTimes | None:
    """Means over steps (DDP reports means) of DDP's own three backward figures, from the trace.

    Communication ends where DDP's finalize_backward ends it: after the last reduced bucket is
    copied back into the gradients (the last all-reduce's end when the trace has no such op)."""
    timelines = _timelines_with_finalize(rank)
    if not timelines:
        return None
    compute = [max(b.ready_ms for b in t) for t, _ in timelines]
    comm = [max(max(b.end_ms for b in t), done or 0.0) - min(b.ready_ms for b in t) for t, done in timelines]
    overlap = [max(b.ready_ms for b in t) - min(b.ready_ms for b in t) for t, _ in timelines]
    return BackwardTimes(statistics.fmean(compute), statistics.fmean(comm), statistics.fmean(overlap))


def median_timeline(timelines: list[list[BucketEvent]]) -> list[BucketEvent]:
    """The step whose last all-reduce ends at the median time: a typical backward pass."""
    if not timelines:
        return []
    ordered = sorted(timelines, key=lambda t: max(b.end_ms for b in t))
    return ordered[len(ordered) // 2]
