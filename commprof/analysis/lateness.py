"""Who made the others wait, and for how long: the one measure of lateness. At a collective, a rank that arrives
last makes each other rank wait from its own arrival to the last one; what the rank costs the job there is the mean
of those waits over the other ranks (`others_wait`), and per step the sum over the step's collectives (its longest
where only that is measurable). The profiled steps read arrivals from the traces, clocks aligned across hosts
(analysis/crossrank.py); every step of the whole run reads them from the ranks' own records (`lateness`), where the
stand-out steps, the waits per step (the straggler's and the stalls' gains) and the slow rank share it.

A rank that arrives L ms late at a collective finds it done in T; the others had it in flight for L + T: the
difference of the times in flight is the difference of the arrivals, without a shared clock. Read in a step:
- each collective of the step on its own, where every rank's calls match (the k-th the same op and size on every
  rank: a comm hook timed each bucket), the longest: a rank late between two buckets keeps the step's span alike on
  every rank, but not its later bucket's;
- otherwise the step's span with a collective in flight, the others' against the rank's. Where the calls match it is
  not read: the late rank's own computation between two of its buckets, with nothing of its own in flight, lies in
  the others' span (their first bucket waits through it), which would count it as lateness (a 60 ms delay read as 74);
- and, the larger kept, where DDP's own timers give one span per step, the time from each rank's last gradient ready
  to the all-reduces' end (`StepEntry.tail_ms`): the rank whose gradients were ready last has the shortest."""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from commprof.results.step_ledger import StepEntry


def waits_for_last(arrivals: Mapping[int, float]) -> tuple[int, dict[int, float]]:
    """The rank that arrived last at a collective (rank -> its arrival, any unit, any common origin), and how long
    each rank waited for it there (its own wait 0): the one definition of lateness, which every other is read from."""
    last = max(arrivals, key=lambda r: (arrivals[r], -r))
    return last, {rank: arrivals[last] - arrival for rank, arrival in arrivals.items()}


def others_wait(arrival: float, others: Iterable[float]) -> float:
    """How long the others waited for a rank that arrived at `arrival`, the mean over them of the time from their
    arrival to its; one that came later waited nothing."""
    waits = [max(0.0, arrival - other) for other in others]
    return statistics.fmean(waits) if waits else 0.0


def who(costs: Mapping[int, float]) -> int | None:
    """The one rule for who was late: the rank whose cost to the others is the largest (the lowest of equals),
    where any is above 0; None where no rank cost anything."""
    ranked = costliest(costs)
    return ranked[0] if ranked else None


def costliest(costs: Mapping[int, float]) -> list[int]:
    """The ranks that cost the others anything, the costliest first (the lowest rank of equals first)."""
    return sorted((rank for rank, cost in costs.items() if cost > 0), key=lambda r: (-costs[r], r))


def excess(values: Mapping[int, float], rank: int) -> float:
    """How much more of something `rank` had than the median of the other ranks (negative: less)."""
    others = [v for r, v in values.items() if r != rank]
    return values[rank] - statistics.median(others) if others else 0.0


Members = Mapping[int, Mapping[str, tuple[int, ...]]]  # rank -> its process groups' names -> their members


def lateness(ranks: dict[int, StepEntry], members: Members | None = None) -> dict[int, float]:
    """rank -> how long the others waited for it in this step (ms, the mean over them): 0 for each where the step
    had no collective; empty for a single rank. `members`: each rank's process groups (its record's), where its
    calls name them: a step whose collectives ran over groups smaller than the job is read group by group."""
    if len(ranks) < 2:
        return {}
    within = _within_groups(ranks, members) if members else None
    if within is not None:
        return within
    matched = _calls_match(ranks)
    reading = _longest_wait if matched else _span
    return {rank: max(reading(ranks, rank), _ready_last(ranks, rank)) for rank in ranks}


def _within_groups(ranks: dict[int, StepEntry], members: Members) -> dict[int, float] | None:
    """Each group's members against each other alone, over that group's collectives; a rank's lateness the largest
    in any of its groups: a rank late in its own group is late there, and the ranks of other groups, which never
    waited for it, are not. None where every collective of the step ran over all the ranks."""
    instances = {
        (timed.group, members[rank].get(timed.group, ()))
        for rank, entry in ranks.items()
        if rank in members
        for timed in entry.groups
    }
    everyone = tuple(sorted(ranks))
    if not instances or all(tuple(sorted(group)) == everyone for _, group in instances):
        return None
    found = dict.fromkeys(ranks, 0.0)
    for name, group in instances:
        if len(group) < 2 or not all(r in ranks for r in group):
            continue
        own = lateness({r: _of_group(ranks[r], name) for r in group})
        for rank, ms in own.items():
            found[rank] = max(found[rank], ms)
    return found


def _of_group(entry: StepEntry, name: str) -> StepEntry:
    """The step as one of its groups saw it: that group's calls and time in flight (its calls unread where the
    step kept only some of them)."""
    timed = next((g for g in entry.groups if g.group == name), None)
    calls = () if entry.calls_dropped else tuple(c for c in entry.calls if c.group == name)
    return StepEntry(entry.step, entry.step_ms, timed.comm_ms if timed else 0.0, 0, calls)


def core_wait_excess(ranks: dict[int, StepEntry]) -> dict[int, float]:
    """rank -> how much longer than the others' median its training thread waited for a core in this step (ms, 0
    where not longer): something else ran on its core in this launch. Lateness that much is the launch's, not the
    job's: another launch places its ranks and whatever else runs elsewhere."""
    waited = {rank: entry.core_wait_ms for rank, entry in ranks.items()}
    return {rank: max(0.0, excess(waited, rank)) for rank in ranks} if len(ranks) > 1 else {}


def late_rank(ranks: dict[int, StepEntry], members: Members | None = None) -> int | None:
    """The rank the others waited for the longest in this step; where no collective was timed, the one that spent
    the most of the step outside collectives. None for a single rank."""
    if len(ranks) < 2:
        return None
    found = who(lateness(ranks, members))
    if found is not None:
        return found
    busy = {rank: e.step_ms - e.comm_ms for rank, e in ranks.items()}
    return min(busy, key=lambda r: (-busy[r], r))


@dataclass(frozen=True)
class Ledger:
    """What each rank cost the others at each step of the whole run weighed (every rank's collectives timed, the
    first steps, the profiler's reach and torch.compile's steps left out): computed once, read by the straggler, the
    stalls, the stretches and the changes. `waits`: rank -> step -> the others' wait for it beyond `core`, the time
    it waited for a core longer than they did (the launch's, not the job's)."""

    waits: dict[int, dict[int, float]]
    core: dict[int, dict[int, float]]

    @classmethod
    def of(cls, by_step: Mapping[int, dict[int, StepEntry]], members: Members | None = None) -> Ledger:
        """From step -> rank -> entry (the steps to weigh), and each rank's process groups."""
        ranks = sorted({rank for entries in by_step.values() for rank in entries})
        late = {step: lateness(entries, members) for step, entries in by_step.items()}
        core = {step: core_wait_excess(entries) for step, entries in by_step.items()}
        return cls(
            {r: {s: max(0.0, late[s][r] - core[s][r]) for s in by_step} for r in ranks},
            {r: {s: core[s][r] for s in by_step} for r in ranks},
        )

    def late_in(self, first: int, last: int, at_least: int = 3) -> tuple[int, float] | None:
        """Who the others waited for in steps first-last (the one rule, over each rank's median cost per step
        there), and that median; None with fewer than `at_least` steps weighed there, or where no rank cost any."""
        medians = {}
        for rank, by_step in self.waits.items():
            costs = [ms for step, ms in by_step.items() if first <= step <= last]
            if len(costs) < at_least:
                return None
            medians[rank] = statistics.median(costs)
        found = who(medians)
        return (found, medians[found]) if found is not None else None


def _span(ranks: dict[int, StepEntry], rank: int) -> float:
    """Arrivals read as the negated times in flight: the later a rank arrives, the shorter its collectives run."""
    return others_wait(-ranks[rank].comm_ms, (-e.comm_ms for r, e in ranks.items() if r != rank))


def _calls_match(ranks: dict[int, StepEntry]) -> bool:
    """Every rank recorded the step's calls whole, the k-th the same op and size on each."""
    entries = list(ranks.values())
    if not entries[0].calls or any(e.calls_dropped for e in entries):
        return False
    shapes = {tuple((c.op, c.bytes) for c in e.calls) for e in entries}
    return len(shapes) == 1


def _longest_wait(ranks: dict[int, StepEntry], rank: int) -> float:
    """For each collective (the k-th of the step on every rank), how much longer the others had it in flight than
    `rank`, their mean; the longest, not the sum: a rank late at its first bucket delays the buckets in flight after
    it by the same time."""
    return max(
        others_wait(-call.duration_ms, (-e.calls[k].duration_ms for r, e in ranks.items() if r != rank))
        for k, call in enumerate(ranks[rank].calls)
    )


def _ready_last(ranks: dict[int, StepEntry], rank: int) -> float:
    if any(e.tail_ms <= 0 for e in ranks.values()):
        return 0.0
    return others_wait(-ranks[rank].tail_ms, (-e.tail_ms for r, e in ranks.items() if r != rank))
