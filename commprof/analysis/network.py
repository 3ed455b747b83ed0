"""The network a run crossed: which ranks share a host, each tier's link as its probe measured it, each collective's
bus bandwidth as a share of the link it crossed, and whether the link between hosts bounds the step.

A collective's tier is the slowest its process group spans: "network" where the group holds more ranks than any
one host has (it must leave a host), else "host". The probe's tiers come from run.json (instrument/link_probe.py);
a job probed only as a whole counts that probe as its slowest tier."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence

from commprof.analysis.crossrank import Matching
from commprof.analysis.predict import probed_link
from commprof.analysis.what_if import link_what_if, measured_profile
from commprof.results.network import CollectiveOnLink, HostRanks, LinkTier, Network
from commprof.results.report import Report
from commprof.results.run_record import ProbedSize, ProbedTier
from commprof.trace.model import RankTrace, Step
from commprof.trace.rules import busbw_factor

# the link bounds the step: this share of the step or more is exposed communication over it...
LINK_BOUND_EXPOSED = 1 / 3
# ...whose largest transfers run at this share of the link's probed bus bandwidth or more (not latency or waiting)
LINK_BOUND_SATURATION = 0.5


def network_of(
    report: Report,
    windows: Sequence[tuple[RankTrace, list[Step]]] = (),
    probed_after_change: int | None = None,
    matching: Matching | None = None,
) -> Network | None:
    """`probed_after_change`: the first change of the run (its step's or its communication's) after the profiled
    window; the probe, taken at the run's end, then measured another link than the window's collectives crossed.
    `matching`: the collectives matched across ranks, whose transfer (from the last rank's arrival to the end) is
    what the link carried; without it, the calls' whole durations, waits for late ranks included."""
    hosts = _hosts(report)
    if not hosts:
        return None
    tiers = [_tier(t) for t in _probed_tiers(report, len(hosts))]
    by_tier = {t.tier: t for t in tiers} if probed_after_change is None else {}
    widest_host = max(len(h.ranks) for h in hosts)
    world = sum(len(h.ranks) for h in hosts)
    collectives = []
    transfers = transfer_busbw(matching) if matching is not None else {}
    for c in report.collectives:
        if c.busbw_gbps is None or not c.bytes:
            continue
        tier = "network" if len(hosts) > 1 and (c.group_size or world) > widest_host else "host"
        link = by_tier.get(tier)
        carried = transfers.get((c.op, c.bytes))
        # at most the whole link: a transfer timed faster than the probe's largest all-reduce is one too short to time
        # apart from the last rank's arrival (a 2-rank broadcast read 148%), not a faster link
        share = min(1.0, (carried or c.busbw_gbps) / link.busbw_gbps) if link and link.busbw_gbps > 0 else None
        collectives.append(CollectiveOnLink(c.op, c.bytes, c.count, c.busbw_gbps, tier, share, carried))
    what_if = link_what_if(measured_profile(windows), tiers) if len(hosts) > 1 and windows and by_tier else []
    bound = _link_bound_share(report, collectives, len(hosts))
    return Network(hosts, tiers, collectives, bound, what_if, probed_after_change)


def transfer_busbw(matching: Matching) -> dict[tuple[str, int], float]:
    """(op, bytes) -> the median bus bandwidth of its calls over their transfer alone: from the last rank's arrival
    (analysis/lateness: the others waited for it until then) to the call's end, the median over the ranks."""
    speeds: dict[tuple[str, int], list[float]] = defaultdict(list)
    for collective in matching.collectives:
        source = next(iter(collective.sources.values()))
        factor = busbw_factor(collective.op, source.group_size)
        if not source.nbytes or factor is None:
            continue
        last = collective.last_start
        transfer_us = statistics.median(end - last for _, end in collective.spans.values())
        if transfer_us > 0:
            speeds[(collective.op, source.nbytes)].append(source.nbytes / transfer_us / 1e3 * factor)
    return {key: round(statistics.median(values), 4) for key, values in speeds.items()}


def _hosts(report: Report) -> list[HostRanks]:
    named = dict(report.run.rank_hosts) if report.run else {}
    for summary in report.ranks:
        if str(summary.rank) not in named and summary.host:
            named[str(summary.rank)] = summary.host
    if not named and report.run and len(report.run.hosts) == 1:
        named = {str(r.rank): report.run.hosts[0] for r in report.ranks}
    ranks_on: dict[str, list[int]] = defaultdict(list)
    for rank, host in named.items():
        ranks_on[host].append(int(rank))
    return sorted((HostRanks(host, sorted(ranks)) for host, ranks in ranks_on.items()), key=lambda h: h.ranks[0])


def _probed_tiers(report: Report, hosts: int) -> list[ProbedTier]:
    if report.run is None:
        return []
    tiers = list(report.run.link_tiers)
    slowest = "network" if hosts > 1 else "host"
    if report.run.link_probe and slowest not in {t.tier for t in tiers}:
        tiers.append(ProbedTier(slowest, list(range(report.run.world_size)), report.run.link_probe))
    return [t for t in tiers if len(t.ranks) > 1 and len(t.sizes) >= 2]


def _tier(probed: ProbedTier) -> LinkTier:
    n = len(probed.ranks)
    link = probed_link(probed.sizes, n)
    largest = max(probed.sizes, key=lambda s: s.bytes)
    return LinkTier(
        probed.tier, probed.ranks, _busbw_gbps(largest, n), round(link.alpha_us, 2), round(link.bandwidth_gbps, 4)
    )


def _busbw_gbps(size: ProbedSize, ranks: int) -> float:
    """The nccl-tests bus bandwidth of an all-reduce at its repeats' lower quartile (a busy host only adds time)."""
    us = sorted(size.us)[(len(size.us) - 1) // 4]
    return round(size.bytes / us / 1e3 * 2 * (ranks - 1) / ranks, 4) if us > 0 else 0.0


def _link_bound_share(report: Report, collectives: list[CollectiveOnLink], hosts: int) -> float | None:
    """The exposed share of the step where the link between hosts bounds it: the slowest rank's exposed
    communication is LINK_BOUND_EXPOSED of its step or more, and the collectives over that link that move the most
    bytes run at LINK_BOUND_SATURATION of its probed bandwidth or more; else None."""
    shares = [(c.bytes, c.share) for c in collectives if c.tier == "network" and c.share is not None]
    if hosts < 2 or not shares or not report.ranks:
        return None
    exposed = max(r.exposed_comm_ms / r.step_time_ms.mean for r in report.ranks if r.step_time_ms.mean > 0)
    heaviest = max(nbytes for nbytes, _ in shares)
    saturation = statistics.median(share for nbytes, share in shares if nbytes == heaviest)
    return round(exposed, 4) if exposed >= LINK_BOUND_EXPOSED and saturation >= LINK_BOUND_SATURATION else None
