"""The collective-named CPU ranges around each device launch, on the thread that launched it.

Older Kineto traces give an NCCL kernel an `External id` equal to its correlation id, which matches
no CPU op, yet every launch sits inside `nccl:all_to_all` / `record_param_comms` / `c10d::*` ranges
on its own thread: those name the collective and give its size. Custom all-reduce kernels (torch
symmetric memory, vLLM's) are recognised the same way, through the op that launched them.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict
from operator import itemgetter
from typing import Any, Callable, Sequence

from commprof.trace import rules
from commprof.trace.events import CompleteEvent, Event, Thread, decode_args
from commprof.trace.meta import NO_META, CollectiveMeta, meta_from_args


def is_collective_name(name: str) -> bool:
    return bool(rules.COLLECTIVE_LAUNCH.match(name)) or rules.comm_launching_backend(name) is not None


def enclosing_ranges(
    collective_ranges: list[CompleteEvent], launches: dict[Any, CompleteEvent]
) -> dict[Any, list[CompleteEvent]]:
    """correlation -> the collective-named CPU ranges (partition.Partition.collective_ranges) open on the
    launching thread when it launched (from its start to its end, both included), most trusted first
    (rules.ENCLOSING_TRUST), then outermost first; launches inside none are left out."""
    ranges_on: dict[Thread, list[CompleteEvent]] = defaultdict(list)
    for event in collective_ranges:
        ranges_on[(event.pid, event.tid)].append(event)
    launched_on: dict[Thread, list[tuple[float, Any]]] = defaultdict(list)
    for correlation, launch in launches.items():
        if (launch.pid, launch.tid) in ranges_on:
            launched_on[(launch.pid, launch.tid)].append((launch.ts, correlation))
    found: dict[Any, list[CompleteEvent]] = defaultdict(list)
    for thread, ranges in ranges_on.items():
        inside = sorted(launched_on.get(thread, ()), key=itemgetter(0))
        times = [ts for ts, _ in inside]
        for event in sorted(ranges, key=lambda r: (r.ts, -(r.dur or 0))):  # of two that start together, the outer
            for _, correlation in inside[
                bisect_left(times, event.ts) : bisect_right(times, event.ts + (event.dur or 0))
            ]:
                found[correlation].append(event)
    for ranges in found.values():
        if len(ranges) > 1:
            ranges.sort(key=lambda r: rules.trust_rank(r.name))
    return dict(found)


def meta_from_ranges(
    ranges: Sequence[Event], meta_of: Callable[[Event], CollectiveMeta] | None = None
) -> CollectiveMeta:
    """The collective as the most trusted range names it; the element count is the largest any of them records
    (as with In/Out msg nelems: the output of an all_gather, the input of a reduce_scatter, nccl-tests' sizes).
    `meta_of`: what an event's args say (meta_from_args)."""
    metas = [meta_of(r) if meta_of else meta_from_args(decode_args(r)) for r in ranges]
    merged = NO_META
    for event, meta in zip(ranges, metas, strict=False):
        if meta.op is None:
            meta = meta.filled_from(CollectiveMeta(op=rules.op_in_name(event.name)))
        merged = merged.filled_from(meta)
    counts = [m.nelems for m in metas if m.nelems is not None]
    return CollectiveMeta(
        merged.op, max(counts) if counts else None, merged.dtype, merged.group_size, merged.process_group
    )


def launching_backend(ranges: Sequence[Event]) -> str | None:
    """The custom communication family of the op that launched a kernel, if any (rules.COMM_LAUNCHING_OPS)."""
    return next((b for r in ranges if (b := rules.comm_launching_backend(r.name)) is not None), None)
