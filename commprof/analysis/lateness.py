"""Who made the others wait in one step of the whole run, and for how long: the one measure of lateness the whole
run's stand-out steps, its waits per step (the straggler's and the stalls' gains) and its slow rank share.

A rank that arrives L ms late at a collective finds it done in T; the others had it in flight for L + T. Three
readings of it, the largest kept, each from the ranks' own records (results/step_ledger.py), no clock shared:
- the step's span with a collective in flight, the others' against the rank's;
- each collective of the step on its own (where a comm hook timed each bucket), the longest: a rank late between
  two buckets keeps the step's span alike on every rank, but not its later bucket's;
- where DDP's own timers give one span per step, the time from each rank's last gradient ready to the all-reduces'
  end (`StepEntry.tail_ms`): the rank whose gradients were ready last has the shortest."""

from __future__ import annotations

import statistics

from commprof.results.step_ledger import StepEntry


def lateness(ranks: dict[int, StepEntry]) -> dict[int, float]:
    """rank -> how long the others waited for it in this step (ms, the mean over them): 0 for each where the step
    had no collective; empty for a single rank."""
    if len(ranks) < 2:
        return {}
    return {rank: max(_span(ranks, rank), _longest_wait(ranks, rank), _ready_last(ranks, rank)) for rank in ranks}


def late_rank(ranks: dict[int, StepEntry]) -> int | None:
    """The rank the others waited for the longest in this step; where no collective was timed, the one that spent
    the most of the step outside collectives. None for a single rank."""
    if len(ranks) < 2:
        return None
    late = lateness(ranks)
    if late and max(late.values()) > 0:
        return max(late, key=lambda r: late[r])
    busy = {rank: e.step_ms - e.comm_ms for rank, e in ranks.items()}
    return max(busy, key=lambda r: busy[r])


def _span(ranks: dict[int, StepEntry], rank: int) -> float:
    return statistics.fmean(max(0.0, e.comm_ms - ranks[rank].comm_ms) for r, e in ranks.items() if r != rank)


def _longest_wait(ranks: dict[int, StepEntry], rank: int) -> float:
    """For each collective (the k-th of the step on every rank, the same op and size), how much longer the others had
    it in flight than `rank`, their mean; the longest, not the sum: a rank late at its first bucket delays the
    buckets in flight after it by the same time."""
    longest = 0.0
    for k, call in enumerate(ranks[rank].calls):
        others = [e.calls[k] for r, e in ranks.items() if r != rank and k < len(e.calls)]
        if len(others) != len(ranks) - 1 or any((c.op, c.bytes) != (call.op, call.bytes) for c in others):
            continue
        longest = max(longest, statistics.fmean(max(0.0, c.duration_ms - call.duration_ms) for c in others))
    return longest


def _ready_last(ranks: dict[int, StepEntry], rank: int) -> float:
    if any(e.tail_ms <= 0 for e in ranks.values()):
        return 0.0
    return statistics.fmean(max(0.0, e.tail_ms - ranks[rank].tail_ms) for r, e in ranks.items() if r != rank)
