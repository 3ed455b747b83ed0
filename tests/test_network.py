"""The report's network section, on hand-built reports whose every number can be checked by hand."""

import pytest

from commprof.analysis.network import network_of
from commprof.analysis.predict import StepProfile
from commprof.analysis.what_if import link_what_if
from commprof.render.network_view import apart_note, link_bound_headline, network_sections
from commprof.results.network import LinkTier
from commprof.results.report import Clocks, CollectiveStats, RankSummary, Report, Stat
from commprof.results.run_record import ProbedSize, ProbedTier
from tests.conftest import run_summary

MIB = 1024 * 1024
# a link of 50 bytes/us (0.05 GB/s, 400 Mbit/s) and no latency: 2 ranks' all-reduce of S bytes takes S/50 us
PROBE = [ProbedSize(4096, [81.92, 90.0, 200.0]), ProbedSize(4 * MIB, [83886.08, 84000.0, 99000.0])]


def rank(number: int, host: str, step_ms: float = 1000.0, exposed_ms: float = 800.0) -> RankSummary:
    return RankSummary(
        number, "cpu", 6, Stat(step_ms, step_ms, step_ms), step_ms - exposed_ms, exposed_ms + 10, 10.0, exposed_ms,
        0.0, 0.0, None, exposed_ms / step_ms, host,
    )  # fmt: skip


def all_reduce(nbytes: int, busbw_gbps: float, group: int = 2) -> CollectiveStats:
    return CollectiveStats("all_reduce", "gloo", "float32", nbytes, group, 12, 2.0, 1.0, busbw_gbps, busbw_gbps)


def report(hosts: dict[str, str], collectives, exposed_ms: float = 800.0, tiers=()) -> Report:
    run = run_summary(world_size=len(hosts), rank_hosts=hosts, link_probe=PROBE, link_tiers=list(tiers))
    ranks = [rank(int(r), h, exposed_ms=exposed_ms) for r, h in hosts.items()]
    return Report("r", "run", "", [], ranks, list(collectives), run=run)


def test_two_hosts_bound_by_their_link():
    two = report({"0": "node0", "1": "node1"}, [all_reduce(4 * MIB, 0.013), all_reduce(28 * MIB, 0.04)])
    network = network_of(two)
    assert [(h.host, h.ranks) for h in network.hosts] == [("node0", [0]), ("node1", [1])]
    # the whole job's probe crosses the hosts: the link between them. busbw of 4 MiB in 83,886.08 us (the lower
    # quartile of its repeats: slow repeats ignored) = 4,194,304 / 83,886.08 / 1e3 = 0.05 GB/s; fitted alike
    (link,) = network.tiers
    assert (link.tier, link.ranks, link.busbw_gbps, link.bandwidth_gbps, link.alpha_us) == (
        "network", [0, 1], 0.05, 0.05, 0.0
    )  # fmt: skip
    assert [(c.bytes, c.tier, c.share) for c in network.collectives] == [
        (4 * MIB, "network", pytest.approx(0.26)),
        (28 * MIB, "network", pytest.approx(0.8)),
    ]
    # 800 of 1000 ms exposed, the largest all-reduce at 80% of the link: the link bounds the step, and the headline
    # says so (these facts' words: test_render_network_words.py)
    assert network.link_bound_share == 0.8
    assert [(c.op, c.busbw_gbps) for c in network.collectives] == [("all_reduce", 0.013), ("all_reduce", 0.04)]
    assert link_bound_headline(dataclass_with(two, network)) is not None


def dataclass_with(report_: Report, network) -> Report:
    import dataclasses

    return dataclasses.replace(report_, network=network)


def test_not_bound_by_the_link_when_it_is_not_saturated_or_not_crossed_or_not_exposed():
    hosts = {"0": "node0", "1": "node1"}
    # the same exposed time, but the large all-reduce at 20% of the link: latency or waiting, not the link
    assert network_of(report(hosts, [all_reduce(28 * MIB, 0.01)])).link_bound_share is None
    # saturated, but little of the step exposed
    assert network_of(report(hosts, [all_reduce(28 * MIB, 0.04)], exposed_ms=100.0)).link_bound_share is None
    # one host: its probe is the link within the host, and nothing crosses a network
    one = network_of(report({"0": "node0", "1": "node0"}, [all_reduce(28 * MIB, 0.04)]))
    assert [t.tier for t in one.tiers] == ["host"] and one.collectives[0].tier == "host"
    assert one.link_bound_share is None and link_bound_headline(dataclass_with(report(hosts, []), one)) is None


def test_a_group_within_one_host_crosses_no_network():
    hosts = {"0": "a", "1": "a", "2": "b", "3": "b"}
    host_tier = ProbedTier("host", [0, 1], PROBE)
    network = network_of(
        report(hosts, [all_reduce(MIB, 0.02, group=2), all_reduce(MIB, 0.02, group=4)], tiers=[host_tier])
    )
    assert [c.tier for c in network.collectives] == ["host", "network"]
    # the run probed the host tier; the whole job's probe is its network tier
    assert [(t.tier, t.ranks) for t in network.tiers] == [("host", [0, 1]), ("network", [0, 1, 2, 3])]


def test_the_section_lists_hosts_links_and_collectives():
    two = report({"0": "node0", "1": "node1"}, [all_reduce(28 * MIB, 0.04)])
    (section,) = network_sections(dataclass_with(two, network_of(two)))
    hosts, links, on_link = (b for b in section.blocks if hasattr(b, "rows"))
    assert hosts.rows == [("node0", "0"), ("node1", "1")]
    assert links.rows == [("between hosts", "0, 1", "0.050", "0.050", "0")]
    assert on_link.rows == [("all_reduce", "28.00 MiB", "12", "0.040", "-", "between hosts", "80%")]


def test_a_probe_from_after_the_runs_change_is_no_measure_of_the_window_before_it():
    """Issue 52's control: the link fell fourfold at step 41, after the profiled window; the probe, at the run's end,
    measured the slower link, and the window's largest all-reduce read as 215% of it. Set apart: the probe's own
    figures stay, but no share, no link bound and no what-if are taken from it, and the section says why."""
    two = report({"0": "node0", "1": "node1"}, [all_reduce(28 * MIB, 0.1075)])
    assert network_of(two).collectives[0].share == 1.0  # 215% of the probed link, said as the whole link at most
    network = network_of(two, probed_after_change=41)
    assert [t.busbw_gbps for t in network.tiers] == [0.05]
    assert network.collectives[0].share is None and network.link_bound_share is None and network.what_if == []
    (section,) = network_sections(dataclass_with(two, network))
    on_link = [b for b in section.blocks if hasattr(b, "rows")][2]
    assert on_link.rows == [("all_reduce", "28.00 MiB", "12", "0.107", "-", "between hosts", "probed after step 41")]
    notes = [b.text for b in section.blocks if getattr(b, "style", "") == "note"]
    assert network.probed_after_change == 41 and any(apart_note(41) in n for n in notes)  # its words: render's tests


def test_the_share_of_the_link_is_the_transfers_not_the_waits_for_a_late_rank():
    """Rank 1 arrives 83,886 us late at each 4 MiB all-reduce: its calls take 83,886 us (the transfer alone), rank 0's
    twice that. Over the whole calls the all-reduce runs at 0.033 GB/s, two thirds of the 0.05 GB/s link; over the
    transfer, which is what the link carried, at 0.05: all of it."""
    from commprof.analysis.crossrank import MatchedCollective, Matching
    from commprof.trace.model import Collective

    transfer_us = 4 * MIB / 0.05 / 1e3  # 83,886.08 us at 0.05 GB/s (2 ranks: busbw = algbw)
    calls = []
    for k in range(3):
        start = k * 1e6
        spans = {0: (start, start + 2 * transfer_us), 1: (start + transfer_us, start + 2 * transfer_us)}
        sources = {r: Collective("all_reduce", "gloo", *spans[r], nbytes=4 * MIB, group_size=2) for r in spans}
        calls.append(MatchedCollective("all_reduce", spans, sources))
    two = report({"0": "node0", "1": "node1"}, [all_reduce(4 * MIB, 0.0333)])
    plain = network_of(two)
    assert plain.collectives[0].share == pytest.approx(0.666) and plain.collectives[0].transfer_busbw_gbps is None
    matched = network_of(two, matching=Matching({0: 0.0, 1: 0.0}, Clocks("one host"), calls))
    (on_link,) = matched.collectives
    assert on_link.transfer_busbw_gbps == pytest.approx(0.05) and on_link.share == pytest.approx(1.0)


def profile(exposed_ms: float) -> StepProfile:
    # before backward 10 ms, backward 20, tail 5; two 4 MiB buckets ready at 10 and 20 ms of the backward
    return StepProfile(2, 10.0, 20.0, 5.0, exposed_ms, [4 * MIB, 4 * MIB], [0.5, 1.0])


def test_what_if_links_by_hand():
    between = LinkTier("network", [0, 1], 0.05, 0.0, 0.05)  # 50 bytes/us: a 4 MiB bucket takes 83.886 ms
    rows = {w.factor: w for w in link_what_if(profile(150.0), [between], (1.0, 4.0))}
    # as measured (x1): the model's exposed time is bucket 0 10 -> 93.886, bucket 1 93.886 -> 177.772: 157.772 ms;
    # x4: 20.972 ms a bucket, 10 -> 30.972 -> 51.943: 31.943 ms. Anchored on the measured step (35 + 150 ms):
    bucket, fast = 4 * MIB / 50 / 1000, 4 * MIB / 200 / 1000
    model_now, model_fast = 10 + 2 * bucket - 20, 10 + 2 * fast - 20
    assert rows[1.0].step_ms == pytest.approx(185.0, abs=1e-3) and rows[1.0].exposed_ms == pytest.approx(150.0)
    assert rows[4.0].step_ms == pytest.approx(185.0 + model_fast - model_now, abs=1e-3)
    assert rows[4.0].exposed_ms == pytest.approx(150.0 + model_fast - model_now, abs=1e-3)
    assert rows[4.0].busbw_gbps == 0.2


def test_what_if_keeps_the_link_within_a_host_as_a_limit():
    between = LinkTier("network", [0, 2], 0.05, 0.0, 0.05)
    within = LinkTier("host", [0, 1], 0.1, 0.0, 0.1)  # 100 bytes/us: x4 between hosts is capped at x2
    capped = {w.factor: w for w in link_what_if(profile(150.0), [between, within], (1.0, 2.0, 4.0))}
    assert capped[4.0].step_ms == pytest.approx(capped[2.0].step_ms)
    assert link_what_if(profile(150.0), [within]) == []  # one host: no link between hosts to change
    assert link_what_if(None, [between]) == []  # no DDP all-reduce measured


def test_a_share_of_the_link_is_never_above_the_whole_link():
    """Issue 72: a broadcast whose transfer was timed faster than the probe's largest all-reduce read 148% of the
    link; a transfer too short to time apart from the last rank's arrival is at most the link's speed."""
    two = report({"0": "node0", "1": "node1"}, [all_reduce(28 * MIB, 0.074)])
    assert network_of(two).collectives[0].share == 1.0
    slower = report({"0": "node0", "1": "node1"}, [all_reduce(28 * MIB, 0.04)])
    assert network_of(slower).collectives[0].share == pytest.approx(0.8)
