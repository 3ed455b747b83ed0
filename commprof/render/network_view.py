"""The report's network section (Report.network): which ranks share a host, each tier's link as its probe measured
it, each collective beside the link it crossed; and the headline sentence when the link between hosts bounds the
step."""

from __future__ import annotations

from commprof.render.document import Block, Section, Table, Text
from commprof.results.network import TIER_NAMES, Network
from commprof.results.report import Report
from commprof.values import human_bytes

TITLE = "Network"
HOST_HEADERS = ("host", "ranks")
LINK_HEADERS = ("link", "ranks probed", "busbw GB/s", "bandwidth GB/s", "latency us")
ON_LINK_HEADERS = ("op", "size", "calls", "busbw GB/s", "transfer GB/s", "link", "of link")
WHAT_IF_HEADERS = ("link between hosts", "busbw GB/s", "step ms", "exposed ms")
WHAT_IF_NOTE = (
    "What if the link between hosts were faster or slower: the measured median profiled step plus the bucket "
    "model's change (docs/prediction.md, What-if links); the link within a host and the latency kept as measured."
)
PROBE_NOTE = (
    "Links: all-reduces timed alone after training, one group per tier; busbw of the largest size probed, bandwidth "
    "and latency per ring step fitted over the sizes. "
)
COLLECTIVES_NOTE = (
    "Collectives: median bus bandwidth in the profiled steps, over each call's whole duration and over its transfer "
    "alone (from the last rank's arrival to its end: the waits for late ranks left out; where the calls were matched "
    "across ranks), and the transfer's share (else the whole call's) of the probed busbw of the slowest link its "
    "group crosses."
)
UNPROBED_NOTE = "Collectives: median bus bandwidth in the profiled steps; this launch did not probe its links."


def network_sections(report: Report) -> list[Section]:
    network = report.network
    if network is None:
        return []
    blocks: list[Block] = [Text(hosts_line(network)), Table(HOST_HEADERS, host_rows(network), left=HOST_HEADERS)]
    if network.tiers:
        blocks.append(Table(LINK_HEADERS, link_rows(network), left=("link", "ranks probed")))
    if network.collectives:
        blocks.append(Table(ON_LINK_HEADERS, on_link_rows(network), left=("op", "link"), key=2))
    if network.tiers and network.probed_after_change is not None:
        blocks.append(Text(PROBE_NOTE + apart_note(network.probed_after_change), "note"))
    elif network.tiers:
        blocks.append(Text(PROBE_NOTE + COLLECTIVES_NOTE, "note"))
    elif network.collectives:
        blocks.append(Text(UNPROBED_NOTE, "note"))
    if network.what_if:
        blocks += [Table(WHAT_IF_HEADERS, what_if_rows(network), left=()), Text(WHAT_IF_NOTE, "note")]
    return [Section(TITLE, blocks)]


def apart_note(changed_at: int) -> str:
    return (
        "Collectives: median bus bandwidth in the profiled steps; no share of a link: the probe ran at the run's end, "
        f"after the run changed at step {changed_at}, and the profiled steps are from before it (the whole run, "
        "below)."
    )


def what_if_rows(network: Network) -> list[tuple[str, ...]]:
    return [
        (
            "as measured" if w.factor == 1 else f"{w.factor:g}x as fast",
            f"{w.busbw_gbps:.3f}",
            f"{w.step_ms:.1f}",
            f"{w.exposed_ms:.1f}",
        )
        for w in network.what_if
    ]


def hosts_line(network: Network) -> str:
    ranks = sum(len(h.ranks) for h in network.hosts)
    hosts = len(network.hosts)
    return f"{ranks} rank{'s' if ranks != 1 else ''} on {hosts} host{'s' if hosts != 1 else ''}."


def host_rows(network: Network) -> list[tuple[str, ...]]:
    return [(h.host, _ranks(h.ranks)) for h in network.hosts]


def link_rows(network: Network) -> list[tuple[str, ...]]:
    return [
        (TIER_NAMES[t.tier], _ranks(t.ranks), f"{t.busbw_gbps:.3f}", f"{t.bandwidth_gbps:.3f}", f"{t.alpha_us:.0f}")
        for t in network.tiers
    ]


def on_link_rows(network: Network) -> list[tuple[str, ...]]:
    return [
        (
            c.op,
            human_bytes(c.bytes),
            str(c.calls),
            f"{c.busbw_gbps:.3f}",
            f"{c.transfer_busbw_gbps:.3f}" if c.transfer_busbw_gbps is not None else "-",
            TIER_NAMES[c.tier],
            f"{c.share:.0%}" if c.share is not None else _no_share(network),
        )
        for c in network.collectives
    ]


def _no_share(network: Network) -> str:
    return "not probed" if network.probed_after_change is None else f"probed after step {network.probed_after_change}"


def link_bound_headline(report: Report) -> str | None:
    """'The link between hosts bounds the step: ...' with its numbers, or None when it does not."""
    network = report.network
    if network is None or network.link_bound_share is None:
        return None
    link = next(t for t in network.tiers if t.tier == "network")
    crossing = [c for c in network.collectives if c.tier == "network" and c.share is not None]
    heaviest = max(crossing, key=lambda c: (c.bytes, c.calls))
    return (
        f"The link between hosts bounds the step: {network.link_bound_share:.0%} of it is exposed communication, and "
        f"its largest {heaviest.op} ({human_bytes(heaviest.bytes)}) runs at {heaviest.busbw_gbps:.3f} GB/s bus "
        f"bandwidth, {heaviest.share:.0%} of the {link.busbw_gbps:.3f} GB/s the probe measured between hosts"
    )


def _ranks(ranks: list[int]) -> str:
    if len(ranks) > 2 and ranks == list(range(ranks[0], ranks[-1] + 1)):
        return f"{ranks[0]}-{ranks[-1]}"
    return ", ".join(map(str, ranks))
