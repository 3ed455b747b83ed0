"""Across ranks: match collectives, align clocks, split each rank's time into wait and transfer.

Matching: within a profiler step, the k-th collective of a process group on every rank is the
same collective (programs issue collectives in the same order on every rank); the k-th send from
rank s to rank r is the k-th receive on r from s (when the trace names the peer).

Clock alignment: ranks on one host share a clock. Across hosts, commprof run measures the
offsets at start (run.json); without them (traces from elsewhere), synchronising collectives
(all_reduce, all_gather, reduce_scatter, all_to_all, barrier) finish together on every rank, so
a host's offset is the median, over matched collectives, of (reference end - this rank's end).
The median ignores the few collectives that end unevenly. See docs/semantics.md.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass

from commprof.analysis.collectives import in_windows
from commprof.analysis.lateness import costliest, waits_for_last, who
from commprof.results.report import Clocks, CrossRank, RankSkew
from commprof.results.run_record import RunSummary
from commprof.trace.model import Collective, RankTrace, RunTrace, Step

ALIGN_OPS = frozenset({"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "barrier"})
Key = tuple[str, str, int]  # (step name, process group or "p2p s->r", index within that step and group)


@dataclass(frozen=True)
class _Call:
    op: str
    start: float  # microseconds on the rank's own clock, from the reference rank's time base
    end: float
    source: Collective


def _keyed_calls(rank: RankTrace, windows: list[Step], reference_base: float) -> tuple[dict[Key, _Call], int]:
    """The rank's collectives by matching key, and how many point-to-point calls name no peer (never matched)."""
    calls: dict[Key, _Call] = {}
    counters: dict[tuple[str, str], int] = defaultdict(int)
    no_peer = 0
    # relative to one base: epoch microseconds (~1.8e15) would cost sub-microsecond precision
    base = rank.base_us - reference_base
    for window in windows:
        for c in sorted(in_windows(rank.collectives, [window]), key=lambda c: c.start):
            if c.op == "send_recv":
                if c.peer is None or c.sends is None:
                    no_peer += 1
                    continue
                sender, receiver = (rank.rank, c.peer) if c.sends else (c.peer, rank.rank)
                slot = (window.name, f"p2p {sender}->{receiver}")
            else:
                slot = (window.name, _group_key(rank, c.process_group))
            key = (*slot, counters[slot])
            calls[key] = _Call(c.op, c.start + base, c.end + base, c)
            counters[slot] += 1
    return calls, no_peer


def _group_key(rank: RankTrace, name: str | None) -> str:
    """A collective's group as matching keys it: its name with its members where the trace gives them (two groups of
    one name on different ranks, as some torch versions name their split groups, are not one group)."""
    if name is None:
        return "default"
    members = next((g.ranks for g in rank.groups if g.name == name), None)
    return f"{name} {sorted(members)}" if members else name


@dataclass(frozen=True)
class MeasuredClocks:
    """Offsets commprof measured when the run started (run.json), as microseconds to add per rank."""

    offsets: dict[int, float]
    worst_round_trip_us: float


def measured_offsets(run: RunSummary | None, trace: RunTrace) -> MeasuredClocks | None:
    """None unless run.json has a measured offset for the host of every rank and there are several hosts."""
    by_host = {c.host: c for c in run.clock_offsets} if run else {}
    hosts = {r.rank: r.host or "" for r in trace.ranks}
    if len(by_host) < 2 or not all(h in by_host for h in hosts.values()):
        return None
    return MeasuredClocks(
        {rank: -by_host[h].offset_us for rank, h in hosts.items()},
        max(by_host[h].round_trip_us for h in set(hosts.values())),
    )


def _clock_offsets(
    ranks: list[RankTrace], calls: dict[int, dict[Key, _Call]], measured: MeasuredClocks | None
) -> tuple[dict[int, float], Clocks]:
    reference = ranks[0]
    hosts = {r.rank: r.host or f"unknown-host-of-rank-{r.rank}" for r in ranks}
    if len(set(hosts.values())) == 1:
        return {r.rank: 0.0 for r in ranks}, Clocks("one host")
    if measured is not None:
        base = measured.offsets[reference.rank]
        return (
            {r.rank: measured.offsets[r.rank] - base for r in ranks},
            Clocks("measured", len(set(hosts.values())), measured.worst_round_trip_us / 2),
        )
    per_rank = _chained_offsets(ranks, calls)
    by_host: dict[str, list[float]] = defaultdict(list)
    for rank in ranks:
        by_host[hosts[rank.rank]].append(per_rank[rank.rank])
    host_offset = {host: statistics.median(values) for host, values in by_host.items()}
    host_offset[hosts[reference.rank]] = 0.0
    method = Clocks("collectives", len(by_host), reference=reference.rank)
    return {r.rank: host_offset[hosts[r.rank]] for r in ranks}, method


def _chained_offsets(ranks: list[RankTrace], calls: dict[int, dict[Key, _Call]]) -> dict[int, float]:
    """Each rank's offset to the reference (the first rank): between two ranks that share synchronising
    collectives, the median of the differences of their ends; a rank that shares none with the reference (its other
    groups' members) through a chain of ranks that do, the shortest; 0 where no chain reaches it."""

    def delta(a: int, b: int) -> float | None:
        ends = [
            calls[a][k].end - call.end
            for k, call in calls[b].items()
            if call.op in ALIGN_OPS and k in calls[a] and calls[a][k].op == call.op
        ]
        return statistics.median(ends) if ends else None

    reference = ranks[0].rank
    offsets = {reference: 0.0}
    for rank in ranks[1:]:  # most ranks share a collective with the reference
        if (d := delta(reference, rank.rank)) is not None:
            offsets[rank.rank] = d
    frontier = list(offsets) if len(offsets) < len(ranks) else []
    while frontier:
        reached = []
        for known in frontier:
            for rank in ranks:
                if rank.rank not in offsets and (d := delta(known, rank.rank)) is not None:
                    offsets[rank.rank] = offsets[known] + d
                    reached.append(rank.rank)
        frontier = reached
    return {r.rank: offsets.get(r.rank, 0.0) for r in ranks}


@dataclass(frozen=True)
class MatchedCollective:
    """One collective on every rank that ran it, in aligned epoch microseconds."""

    op: str
    spans: dict[int, tuple[float, float]]  # rank -> (start, end), aligned, from the first rank's time base
    sources: dict[int, Collective]

    @property
    def last_start(self) -> float:
        """When the last rank arrived (analysis/lateness.waits_for_last)."""
        last, _ = waits_for_last({r: start for r, (start, _) in self.spans.items()})
        return self.spans[last][0]


@dataclass(frozen=True)
class Matching:
    offsets: dict[int, float]  # microseconds added to a rank's epoch times
    alignment: Clocks
    collectives: list[MatchedCollective]
    unmatched_calls: int = 0  # calls on some rank that no other rank's call matched (or send/recv without a peer)


def match_collectives(per_rank: list[tuple[RankTrace, list[Step]]], measured: MeasuredClocks | None = None) -> Matching:
    ranks = [r for r, _ in per_rank]
    keyed = {r.rank: _keyed_calls(r, w, ranks[0].base_us) for r, w in per_rank}
    calls = {rank: found for rank, (found, _) in keyed.items()}
    unmatched = sum(no_peer for _, no_peer in keyed.values())
    offsets, method = _clock_offsets(ranks, calls, measured)
    matched = []
    for key in sorted(set().union(*(c.keys() for c in calls.values()))):
        present = {r: calls[r][key] for r in calls if key in calls[r]}
        if len(present) < 2 or len({c.op for c in present.values()}) != 1:
            unmatched += len(present)
            continue
        spans = {r: (c.start + offsets[r], c.end + offsets[r]) for r, c in present.items()}
        matched.append(
            MatchedCollective(next(iter(present.values())).op, spans, {r: c.source for r, c in present.items()})
        )
    return Matching(offsets, method, matched, unmatched)


def cross_rank(
    matching: Matching | None, per_rank: list[tuple[RankTrace, list[Step]]], median_step_ms: dict[int, float]
) -> CrossRank | None:
    """Wait, transfer and the straggler from the matched collectives (None with one rank). The straggler is the
    rank whose late arrival costs the others the most waiting: at each matched collective, the others' mean wait
    for the rank that arrived last (analysis/lateness.others_wait) is charged to it, in the step its call is in."""
    if matching is None:
        return None
    ranks = [r for r, _ in per_rank]
    steps = {r.rank: max(1, len(w)) for r, w in per_rank}
    step_of = {r.rank: w for r, w in per_rank}
    wait: dict[int, float] = defaultdict(float)
    transfer: dict[int, float] = defaultdict(float)
    caused_at: dict[int, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    caused_in: dict[int, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    last_count: dict[int, int] = defaultdict(int)
    when_last: dict[int, list[float]] = defaultdict(list)  # the others' wait for a rank, where it arrived last
    for collective in matching.collectives:
        last_rank, waits = waits_for_last({r: start for r, (start, _) in collective.spans.items()})
        last_start = collective.last_start
        others = [w for r, w in waits.items() if r != last_rank]
        waited = statistics.fmean(others) if others else 0.0
        last_count[last_rank] += 1
        when_last[last_rank].append(waited)
        caused_at[last_rank][collective.op] += waited
        caused_in[last_rank][_step_name(step_of.get(last_rank, []), collective.sources[last_rank].start)] += waited
        for r, (_, end) in collective.spans.items():
            wait[r] += waits[r]
            transfer[r] += max(0.0, end - last_start)
    caused = {r: sum(by_op.values()) for r, by_op in caused_at.items()}

    def per_step_ms(rank: int, us: float) -> float:
        return us / steps[rank] / 1000

    skews = [
        RankSkew(
            rank=r.rank,
            clock_offset_us=matching.offsets[r.rank],
            wait_ms=per_step_ms(r.rank, wait[r.rank]),
            transfer_ms=per_step_ms(r.rank, transfer[r.rank]),
            last_arrivals=last_count[r.rank],
            median_step_ms=median_step_ms[r.rank],
            wait_caused_ms=per_step_ms(r.rank, caused.get(r.rank, 0.0)),
        )
        for r in ranks
    ]
    straggler = who(caused)
    where = sorted(caused_at[straggler].items(), key=lambda item: -item[1])[:TOP_OPS] if straggler is not None else []
    slowest = max(median_step_ms, key=lambda r: median_step_ms[r])
    return CrossRank(
        ranks=skews,
        matched_collectives=len(matching.collectives),
        alignment=matching.alignment,
        straggler=straggler,
        straggler_late_ms=statistics.fmean(when_last[straggler]) / 1000 if straggler in when_last else 0.0,
        costliest=costliest(caused),
        step_spread_ms=median_step_ms[slowest] - min(median_step_ms.values()),
        slowest_rank=slowest,
        straggler_cost_ms=per_step_ms(straggler, caused[straggler]) if straggler is not None else 0.0,
        straggler_ops={op: per_step_ms(straggler, us) for op, us in where} if straggler is not None else {},
        unmatched_calls=matching.unmatched_calls,
        straggler_steps=(
            {name: us / 1000 for name, us in caused_in[straggler].items() if name} if straggler is not None else {}
        ),
    )


def _step_name(steps: list[Step], start: float) -> str:
    """The profiled step a call that started at `start` (the rank's own clock) is in; "" outside them."""
    return next((s.name for s in steps if s.start <= start < s.end), "")


TOP_OPS = 3  # the collectives named where the straggler makes the others wait
