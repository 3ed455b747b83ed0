"""The collective-named CPU ranges around each device launch, on the thread that launched it.

Older Kineto traces give an NCCL kernel an `External id` equal to its correlation id, which matches
no CPU op, yet every launch sits inside `nccl:all_to_all` / `record_param_comms` / `c10d::*` ranges
on its own thread: those name the collective and give its size. Custom all-reduce kernels (torch
symmetric memory, vLLM's) are recognised the same way, through the op that launched them.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from commprof.trace import rules
from commprof.trace.events import Event, decode_args
from commprof.trace.meta import CollectiveMeta, meta_from_args


def is_collective_name(name: str) -> bool:
    return bool(rules.COLLECTIVE_LAUNCH.match(name)) or rules.comm_launching_backend(name) is not None


def enclosing_ranges(collective_ranges: list[Event], launches: dict[Any, Event]) -> dict[Any, list[Event]]:
    """correlation -> the collective-named CPU ranges (partition.Partition.collective_ranges) open on the
    launching thread when it launched, most trusted first (rules.ENCLOSING_TRUST); launches inside none are
    left out."""
    by_thread: dict[Any, list[tuple[float, int, Any]]] = defaultdict(list)
    for event in collective_ranges:
        by_thread[(event.pid, event.tid)].append((event.ts, 0, event))
    for correlation, launch in launches.items():
        if (launch.pid, launch.tid) in by_thread:
            by_thread[(launch.pid, launch.tid)].append((launch.ts, 1, correlation))
    found: dict[Any, list[Event]] = {}
    for items in by_thread.values():
        # ranges before launches at the same time, and the longer of two ranges first (it encloses the other)
        items.sort(key=lambda item: (item[0], item[1], -(item[2].dur or 0) if item[1] == 0 else 0))
        open_ranges: list[Event] = []
        for ts, kind, item in items:
            if open_ranges and any(r.ts + (r.dur or 0) < ts for r in open_ranges):
                open_ranges = [r for r in open_ranges if r.ts + (r.dur or 0) >= ts]
            if kind == 0:
                open_ranges.append(item)
            elif open_ranges:
                found[item] = sorted(open_ranges, key=lambda r: rules.trust_rank(r.name))
    return found


def meta_from_ranges(ranges: list[Event]) -> CollectiveMeta:
    """The collective as the most trusted range names it; the element count is the largest any of them records
    (as with In/Out msg nelems: the output of an all_gather, the input of a reduce_scatter, nccl-tests' sizes)."""
    metas = [meta_from_args(decode_args(r)) for r in ranges]
    merged = CollectiveMeta()
    for event, meta in zip(ranges, metas):
        if meta.op is None:
            meta = meta.filled_from(CollectiveMeta(op=rules.op_in_name(event.name)))
        merged = merged.filled_from(meta)
    counts = [m.nelems for m in metas if m.nelems is not None]
    return CollectiveMeta(merged.op, max(counts) if counts else None, merged.dtype, merged.group_size,
                          merged.process_group)


def launching_backend(ranges: list[Event]) -> str | None:
    """The custom communication family of the op that launched a kernel, if any (rules.COMM_LAUNCHING_OPS)."""
    return next((b for r in ranges if (b := rules.comm_launching_backend(r.name)) is not None), None)
