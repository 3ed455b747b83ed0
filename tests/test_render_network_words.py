"""The network's words, made in render/network_view.py from facts built by hand: the headline of a step bound by
the link between hosts, and the note of a probe that measured a link the profiled steps did not cross.
test_network.py decides these facts from hand-built reports."""

import dataclasses

from commprof.render.network_view import apart_note, link_bound_headline, network_sections
from commprof.results.network import CollectiveOnLink, HostRanks, LinkTier, Network
from commprof.results.report import Report

MIB = 2**20
HOSTS = [HostRanks("node0", [0]), HostRanks("node1", [1])]
LINK = LinkTier("network", [0, 1], 0.05, 0.0, 0.05)  # 0.05 GB/s between the hosts, as the probe measured it


def with_network(network: Network) -> Report:
    return Report("r", "run", "", [], [], [], network=network)


def test_a_step_bound_by_the_link_between_hosts_says_so_with_its_largest_collective():
    """Two hosts, 80% of the step exposed; the largest all-reduce, 28 MiB, at 0.040 GB/s: 80% of the link."""
    collectives = [
        CollectiveOnLink("all_reduce", 4 * MIB, 12, 0.013, "network", 0.26),
        CollectiveOnLink("all_reduce", 28 * MIB, 12, 0.04, "network", 0.8),
    ]
    network = Network(HOSTS, [LINK], collectives, link_bound_share=0.8)
    assert link_bound_headline(with_network(network)) == (
        "The link between hosts bounds the step: 80% of it is exposed communication, and its largest all_reduce "
        "(28.00 MiB) runs at 0.040 GB/s bus bandwidth, 80% of the 0.050 GB/s the probe measured between hosts"
    )
    assert link_bound_headline(with_network(dataclasses.replace(network, link_bound_share=None))) is None


def test_a_probe_from_after_the_runs_change_is_said_to_be_no_measure_of_the_window():
    """The run changed at step 41, after the profiled window; the probe ran at its end."""
    on_link = [CollectiveOnLink("all_reduce", 28 * MIB, 12, 0.1075, "network", None)]
    network = Network(HOSTS, [LINK], on_link, probed_after_change=41)
    assert apart_note(41) == (
        "Collectives: median bus bandwidth in the profiled steps; no share of a link: the probe ran at the run's end, "
        "after the run changed at step 41, and the profiled steps are from before it (the whole run, below)."
    )
    (section,) = network_sections(with_network(network))
    notes = [b.text for b in section.blocks if getattr(b, "style", "") == "note"]
    assert any(n.endswith(apart_note(41)) for n in notes)
