"""The run told as it happened: its step series cut into stretches at its change points, the rank the others waited
for in each, and the changes between them; and the collectives' own time (the least time in flight on any rank, in
which no rank's lateness is) cut apart, so that a change in communication alone, hidden by overlap or by
computation's noise, is named at its step (docs/semantics.md, Whole run)."""

from __future__ import annotations

import statistics
from collections.abc import Collection

from commprof.analysis.change_point import MIN_SHIFT, change_points
from commprof.analysis.lateness import Ledger, who
from commprof.results.whole_run import ChangePoint, Stretch, WholeRunPoint

LATE_SHARE = 2 / 3  # of a step's change: the others' wait for one rank grew this much, the change is that rank's
LATE_IN_STRETCH = 0.1  # of a stretch's step: the others' median wait for one rank there this much, it is named
NEAR = 3  # points: a change of communication this close to one of the step is that one


def stretches_and_changes(
    series: list[WholeRunPoint], left_out: Collection[int], late: Ledger, hosts: dict[int, str], last_step: int
) -> tuple[list[Stretch], list[ChangePoint]]:
    """`left_out`: steps not to weigh (the first ones, the profiler's reach, compile steps: slower by the profiler or
    the start, not by the run), a point holding one left out; `late`: the run's lateness ledger; `hosts`: rank ->
    host; `last_step`: the run's last, where its last stretch ends."""
    kept = [p for p in series if not set(left_out).intersection(range(p.first_step, p.first_step + p.steps))]
    if not kept:
        return [], []
    step_cuts = change_points([p.step_ms for p in kept])
    floor = MIN_SHIFT * statistics.median(p.step_ms for p in kept)  # what a change of the step itself needs
    timed = any(p.transfer_ms for p in kept)  # else no collective was timed outside the profiler
    transfer_cuts = change_points([p.transfer_ms for p in kept], floor) if timed else []
    parts = _parts(kept, step_cuts, last_step)
    stretches = [_stretch(part, first, last, late, hosts, kept) for part, first, last in parts]
    pairs = zip(stretches, stretches[1:], strict=False)
    covered = [_covered(part) for part, _, _ in parts]
    changes = [
        _step_change(before, after, late, hosts, (covered[i], covered[i + 1]), _earliest(kept, step_cuts[i]), timed)
        for i, (before, after) in enumerate(pairs)
    ]
    for cut in transfer_cuts:
        if all(abs(cut - k) > NEAR for k in step_cuts):
            changes.append(_communication_change(kept, transfer_cuts, cut))
    return stretches, sorted(changes, key=lambda c: c.step)


def _parts(kept: list[WholeRunPoint], cuts: list[int], last_step: int) -> list[tuple[list[WholeRunPoint], int, int]]:
    """The points between the cuts, each with the first and last step its stretch covers: from step 1 to the run's
    last, each stretch to the step before the next one's first point."""
    bounds = [0, *cuts, len(kept)]
    firsts = [1, *(kept[k].first_step for k in cuts)]
    lasts = [first - 1 for first in firsts[1:]] + [last_step]
    spans = zip(bounds, bounds[1:], strict=False)
    return [(kept[a:b], first, last) for (a, b), first, last in zip(spans, firsts, lasts, strict=True)]


def _covered(points: list[WholeRunPoint]) -> int:
    """The steps a lateness reading needs in a stretch: half those of its kept points (a long run's record keeps
    only its slowest steps in full before its last ones: a median over them is not the stretch's)."""
    return max(3, sum(p.steps for p in points) // 2)


def _earliest(kept: list[WholeRunPoint], cut: int) -> int:
    """The first step a change at kept[cut] may lie at: the step after the kept point before it."""
    return kept[cut - 1].first_step + kept[cut - 1].steps


def _stretch(
    points: list[WholeRunPoint], first: int, last: int, late: Ledger, hosts: dict[int, str], kept: list[WholeRunPoint]
) -> Stretch:
    step_ms = statistics.median(p.step_ms for p in points)
    found = late.late_in(first, last, _covered(points))
    named = found if found is not None and found[1] >= LATE_IN_STRETCH * step_ms else None
    return Stretch(
        first_step=first,
        last_step=last,
        step_ms=step_ms,
        comm_ms=statistics.median(p.comm_ms for p in points),
        transfer_ms=statistics.median(p.transfer_ms for p in points),
        run_step_ms=statistics.median(p.step_ms for p in kept),
        late_rank=named[0] if named else None,
        late_host=hosts.get(named[0], "") if named else "",
        late_ms=named[1] if named else 0.0,
    )


def _step_change(
    before: Stretch,
    after: Stretch,
    late: Ledger,
    hosts: dict[int, str],
    need: tuple[int, int],
    earliest: int,
    timed: bool,
) -> ChangePoint:
    """The change between two stretches, with the rank the others came to wait for, if one did: the median of its
    cost per step grew by LATE_SHARE of the step's change or more (one rank or host slowed, not the link); or, where
    the step got shorter, the one they stopped waiting for (its cost shrank as much)."""
    step_change = after.step_ms - before.step_ms
    grown = {}
    for each in late.waits:
        was, became = _median_of(late, each, before, need[0]), _median_of(late, each, after, need[1])
        if was is not None and became is not None:
            grown[each] = became - was
    sign = 1 if step_change > 0 else -1  # a speed-up is a rank that stopped coming late
    rank = who({r: sign * ms for r, ms in grown.items()})
    named = rank is not None and sign * grown[rank] >= LATE_SHARE * abs(step_change)
    return ChangePoint(
        step=after.first_step,
        step_ms_before=before.step_ms,
        step_ms_after=after.step_ms,
        comm_ms_before=before.comm_ms,
        comm_ms_after=after.comm_ms,
        grew=_what_grew(step_change, after.transfer_ms - before.transfer_ms) if timed else "",
        late_rank=rank if named else None,
        late_host=hosts.get(rank, "") if named and rank is not None else "",
        late_ms=grown[rank] if named and rank is not None else 0.0,
        transfer_ms_before=before.transfer_ms,
        transfer_ms_after=after.transfer_ms,
        earliest_step=earliest,
    )


def _median_of(late: Ledger, rank: int, stretch: Stretch, need: int) -> float | None:
    costs = [ms for step, ms in late.waits.get(rank, {}).items() if stretch.first_step <= step <= stretch.last_step]
    return statistics.median(costs) if len(costs) >= need else None


def _communication_change(kept: list[WholeRunPoint], cuts: list[int], cut: int) -> ChangePoint:
    """The collectives' own time changed at `cut` while the step did not: each side from its neighbouring cuts."""
    bounds = [0, *cuts, len(kept)]
    i = bounds.index(cut)
    before, after = kept[bounds[i - 1] : cut], kept[cut : bounds[i + 1]]

    def median(points: list[WholeRunPoint], field: str) -> float:
        return statistics.median(getattr(p, field) for p in points)

    return ChangePoint(
        step=kept[cut].first_step,
        step_ms_before=median(before, "step_ms"),
        step_ms_after=median(after, "step_ms"),
        comm_ms_before=median(before, "comm_ms"),
        comm_ms_after=median(after, "comm_ms"),
        grew="communication",
        kind="communication",
        transfer_ms_before=median(before, "transfer_ms"),
        transfer_ms_after=median(after, "transfer_ms"),
        earliest_step=_earliest(kept, cut),
    )


def _what_grew(step_change: float, comm_change: float) -> str:
    """ "communication" where the collectives' own time (`transfer_ms`: no rank's lateness in it, so a rank that came
    late is not read as a link) moved as much as the step (two thirds of it or more, the same way), "computation"
    where it did not move with it, else "both"."""
    if step_change and comm_change / step_change >= 2 / 3:
        return "communication"
    if abs(comm_change) <= abs(step_change) / 3:
        return "computation"
    return "both"
