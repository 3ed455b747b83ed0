"""Process groups and the dimensions of a device mesh: which dimension each collective ran over, and per dimension
the time its collectives were in flight and left exposed in each rank's steps.

A collective's group is the one its trace names (NCCL's `Process Group Name`) or commprof's record gives it (Gloo:
trace/groups.py); the group's dimension is its DeviceMesh dimension ("mesh_tp": tp), else its description ("world"
for the default group). Times are lengths of unions of intervals clipped to each step, as the breakdown's are
(docs/semantics.md), so a dimension's collectives in flight at once count once and the dimensions' times add up to
more than the breakdown's communication only where two dimensions' collectives overlap."""

from __future__ import annotations

import statistics
from collections import defaultdict

from commprof.results.groups import DimensionTime, StageWait
from commprof.trace.groups import dimension
from commprof.trace.intervals import clip, merge, subtract, total
from commprof.trace.model import Collective, RankTrace, Step
from commprof.trace.rules import PP_DIMENSIONS

WORLD = "world"  # the default group's label
_DEFAULT_DESC = "default_pg"
_UNDESCRIBED = ("", "undefined")


def label_of(rank: RankTrace, call: Collective) -> tuple[str | None, tuple[int, ...]]:
    """(the dimension a collective ran over, its group's members); (None, ()) where its group is not known."""
    group = next((g for g in rank.groups if g.name == call.process_group), None)
    if group is None:
        return None, ()
    return group_label(group.name, group.desc), group.ranks


def group_label(name: str, desc: str) -> str:
    """A group's dimension: its DeviceMesh dimension, "world" for the default group, else the description the
    script gave it, else its name (new_group's description is "undefined")."""
    if dimension(desc):
        return str(dimension(desc))
    if desc == _DEFAULT_DESC:
        return WORLD
    return desc if desc not in _UNDESCRIBED else f"group {name}"


def dimension_times(per_rank: list[tuple[RankTrace, list[Step]]]) -> list[DimensionTime]:
    """Per dimension, its collectives' time per step; none where the collectives ran over fewer than two."""
    comm: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    exposed: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    calls: dict[str, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    members: dict[str, set[tuple[int, ...]]] = defaultdict(set)
    for rank, windows in per_rank:
        if rank.intervals_dropped:  # a rank beyond the first ones, kept without its computation (analysis/digest)
            continue
        by_label: dict[str, list[Collective]] = defaultdict(list)
        for call in rank.collectives:
            label, ranks = label_of(rank, call)
            if label is not None:
                by_label[label].append(call)
                members[label].add(ranks)
        for label, own in by_label.items():
            for window in windows:
                spans = merge((max(c.start, window.start), min(c.end, window.end)) for c in own)
                spans = [(lo, hi) for lo, hi in spans if hi > lo]
                compute = clip(rank.compute, window.start, window.end)
                comm[label][rank.rank].append(total(spans) / 1e3)
                exposed[label][rank.rank].append(total(subtract(spans, compute)) / 1e3)
                calls[label][rank.rank] += sum(1 for c in own if window.start <= c.start < window.end)
    if len(comm) < 2:
        return []
    steps = {rank.rank: len(windows) for rank, windows in per_rank}  # of the ranks counted above
    return [
        DimensionTime(
            dimension=label,
            groups=sorted(list(ranks) for ranks in members[label]),
            comm_ms=statistics.fmean(statistics.fmean(v) for v in comm[label].values()),
            exposed_ms=statistics.fmean(statistics.fmean(v) for v in exposed[label].values()),
            calls_per_step=statistics.fmean(n / max(1, steps[r]) for r, n in calls[label].items()),
            rank_comm_ms={str(r): statistics.fmean(v) for r, v in sorted(comm[label].items())},
            rank_exposed_ms={str(r): statistics.fmean(v) for r, v in sorted(exposed[label].items())},
        )
        for label in sorted(comm, key=lambda d: -statistics.fmean(statistics.fmean(v) for v in exposed[d].values()))
    ]


def stage_waits(dimensions: list[DimensionTime], step_ms: dict[int, float]) -> list[StageWait]:
    """A pipeline's stages (its dimension named as PP_DIMENSIONS), each with its ranks' exposed time in its stage
    group's sends and receives per step, and their step (`step_ms`: each rank's mean step); none without one."""
    pipe = next((d for d in dimensions if d.dimension in PP_DIMENSIONS), None)
    if pipe is None:
        return []
    stages: dict[int, list[int]] = defaultdict(list)
    for members in pipe.groups:
        for stage, rank in enumerate(sorted(members)):
            stages[stage].append(rank)
    return [
        StageWait(
            stage=stage,
            ranks=sorted(ranks),
            wait_ms=statistics.fmean(pipe.rank_exposed_ms.get(str(r), 0.0) for r in ranks),
            step_ms=statistics.fmean(step_ms.get(r, 0.0) for r in ranks),
        )
        for stage, ranks in sorted(stages.items())
    ]
