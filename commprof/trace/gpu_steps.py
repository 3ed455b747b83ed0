"""GPU step windows from the device work each CPU step launched, and Holistic Trace Analysis's one window.

See docs/semantics.md ("Step windows", "Where commprof differs from HTA")."""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections import defaultdict
from typing import NamedTuple

from commprof.trace.intervals import clip, merge, total
from commprof.trace.model import DeviceView, Interval, Step


class DeviceOp(NamedTuple):  # a tuple: one per kernel, built cheaply
    """A kernel, memcpy, memset or sync on the device, and when the CPU launched it (None: not in the trace)."""

    start: float
    end: float
    launched: float | None
    kind: str  # "compute", "comm", "memory" or "sync"


def device_steps(work: list[DeviceOp], cpu_steps: list[Step]) -> tuple[list[Step], tuple[str, ...]]:
    """The device's steps tile its timeline: a step begins with the first device work (kernel, memcpy, memset) it
    launched and lasts until the next step begins; the last one until its own work ends. Work still running from
    before (launched by an earlier step, or with its launch outside the trace) is counted where it runs, and its
    time inside the window is the step's carried_over_us. Steps that launched nothing are returned apart by name,
    unless no step launched anything (then the CPU windows stay)."""
    launched = [op for op in work if op.kind != "sync"]
    starts = [s.start for s in cpu_steps]
    owner = [_step_index(starts, cpu_steps, op.launched) for op in launched]
    own: dict[int, list[Interval]] = defaultdict(list)
    for op, index in zip(launched, owner, strict=False):
        if index is not None:
            own[index].append((op.start, op.end))
    if not own:
        return cpu_steps, ()
    begins = {i: min(s for s, _ in spans) for i, spans in own.items()}
    order = sorted(own)
    ends = {i: max(begins[i], begins[following]) for i, following in zip(order, order[1:], strict=False)}
    ends[order[-1]] = max(e for _, e in own[order[-1]])
    by_start = sorted(zip(launched, owner, strict=False), key=lambda item: item[0].start)
    op_starts = [op.start for op, _ in by_start]
    longest = max(op.end - op.start for op in launched)
    windows = []
    for i in order:
        start, end = begins[i], ends[i]
        near = by_start[bisect_left(op_starts, start - longest) : bisect_left(op_starts, end)]
        others = merge((op.start, op.end) for op, index in near if index != i and op.end > start)
        windows.append(Step(cpu_steps[i].name, start, end, carried_over_us=total(clip(others, start, end))))
    return windows, tuple(cpu_steps[i].name for i in range(len(cpu_steps)) if i not in own)


def hta_view(work: list[DeviceOp], cpu_steps: list[Step], ns_resolution: bool) -> DeviceView | None:
    """HTA 0.5.0's window: with two steps or more, only the device work whose launch is in the trace before the
    last ProfilerStep began (HTA drops the last, possibly incomplete, iteration); the window spans it all. On a
    trace with sub-microsecond times HTA rounds every event inwards to whole microseconds (start up, end down)."""
    kept = (
        [op for op in work if op.launched is not None and op.launched < cpu_steps[-1].start]
        if len(cpu_steps) > 1
        else work
    )
    if not kept:
        return None

    def span(op: DeviceOp) -> Interval:
        return (math.ceil(op.start), math.floor(op.end)) if ns_resolution else (op.start, op.end)

    def of(*kinds: str) -> tuple[Interval, ...]:  # generators: a big trace's spans are never all held at once
        return tuple(merge(s for op in kept if op.kind in kinds and (s := span(op))[1] > s[0]))

    return DeviceView(
        window=(min(span(op)[0] for op in kept), max(span(op)[1] for op in kept)),
        compute=of("compute"),
        communication=of("comm"),
        other=of("memory", "sync"),
    )


def _step_index(starts: list[float], steps: list[Step], ts: float | None) -> int | None:
    if ts is None:
        return None
    i = bisect_right(starts, ts) - 1
    return i if i >= 0 and ts <= steps[i].end else None
