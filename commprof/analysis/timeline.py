"""One Chrome-trace timeline of the whole job (reports/<name>/timeline.json).

Every rank is a process; clocks are aligned as the cross-rank analysis aligns them; each
matched collective is split into its wait part (until the last rank arrived) and its transfer
part. Opens in Perfetto (ui.perfetto.dev) and chrome://tracing.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from commprof.analysis.crossrank import Matching
from commprof.trace.intervals import clip
from commprof.trace.model import RankTrace, Step

STEPS, COMPUTE, FIRST_COMM = 1, 2, 3
LANES = {STEPS: "steps", COMPUTE: "computation"}


def _x(name: str, pid: int, tid: int, start: float, end: float, cat: str, args: dict[str, Any] | None = None) -> dict:
    start, end = round(start, 3), round(end, 3)  # round the ends, so nested events keep nesting
    event = {
        "ph": "X",
        "name": name,
        "cat": cat,
        "pid": pid,
        "tid": tid,
        "ts": start,
        "dur": round(max(end - start, 0.0), 3),
    }
    if args:
        event["args"] = args
    return event


def job_timeline(per_rank: list[tuple[RankTrace, list[Step]]], matching: Matching | None) -> dict[str, Any]:
    offsets = matching.offsets if matching else {}
    # relative to the first rank's time base: epoch microseconds (~1.8e15) would cost float precision
    reference = per_rank[0][0].base_us
    shift = {r.rank: (r.base_us - reference) + offsets.get(r.rank, 0.0) for r, _ in per_rank}
    origin = min(w.start + shift[r.rank] for r, windows in per_rank for w in windows[:1])
    arrival = {
        id(source): matched.last_start  # when the last rank arrived, from the reference base
        for matched in (matching.collectives if matching else [])
        for source in matched.sources.values()
    }
    events: list[dict[str, Any]] = []
    for rank, windows in per_rank:
        pid, move = rank.rank, shift[rank.rank] - origin
        host = f" ({rank.host})" if rank.host else ""
        events += [
            {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": f"rank {pid}{host}"}},
            {"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": pid}},
        ]
        # one lane per stream/thread a collective ran on: events on one lane must nest, and
        # Gloo runs two collectives at once on two worker threads
        comm_lanes = {lane: FIRST_COMM + i for i, lane in enumerate(sorted({c.lane for c in rank.collectives}))}
        names = {**LANES, **{tid: f"communication ({lane})" for lane, tid in comm_lanes.items()}}
        events += [
            {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}}
            for tid, name in names.items()
        ]
        for window in windows:
            events.append(_x(window.name, pid, STEPS, window.start + move, window.end + move, "step"))
            events += [
                _x("compute", pid, COMPUTE, a + move, b + move, "compute")
                for a, b in clip(rank.compute, window.start, window.end)
            ]
            for c in rank.collectives:
                if not window.start <= c.start < window.end:
                    continue
                start, end = c.start + move, c.end + move
                args = {"bytes": c.nbytes, "dtype": c.dtype, "group_size": c.group_size, "lane": c.lane}
                tid = comm_lanes[c.lane]
                events.append(_x(c.op, pid, tid, start, end, "collective", args))
                last = arrival.get(id(c))
                if last is not None:
                    split = min(max(last - origin, start), end)
                    events += [
                        _x("wait", pid, tid, start, split, "wait"),
                        _x("transfer", pid, tid, split, end, "transfer"),
                    ]
    return {
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {
            "generator": "commprof",
            "alignment": dataclasses.asdict(matching.alignment) if matching else {"how": "single rank"},
            "clock_offsets_us": {str(k): v for k, v in offsets.items()},
        },
    }
