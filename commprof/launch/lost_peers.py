"""A job over several hosts that lost one: which host, its ranks, how the connection went and where this node's
ranks were, from the backend's own errors and the ranks' accounts (results/failure_facts.LostHost).

The hosts come from the rendezvous (each node's address by its rank among the nodes, launch/rendezvous.py); the ranks
of node g are g*P .. g*P+P-1 (commprof starts P ranks on every node). Gloo names the peer whose connection closed or
reset (`Connection closed by peer [10.0.0.2]:4312`, in the rank's error), and so does NCCL (its WARN lines in the
rank's log: `Connection closed by remote peer node2<42830>`, `Call to recv from 10.0.0.2<58355> failed : Broken pipe`,
`Got completion from peer 10.0.35.1<49189> with error 4`): that address is a host of the job. A receive that timed
out names none: when every rank of this node waits in a collective, none behind, it waits for the other hosts, which
are named as the ones it heard nothing from."""

from __future__ import annotations

import functools
import ipaddress
import re
import socket
from dataclasses import dataclass

from commprof.results.failure_facts import LostHost, LostNode
from commprof.results.hang import HangEvidence

_PEER_WORDS = re.compile(  # the backend's words for a connection to a peer that went, and the peer's address
    r"Connection (?:closed|reset) by peer \[(?P<a>[0-9A-Fa-f.:]+)\]:\d+"  # Gloo
    r"|(?:Read|Write) error \[(?P<b>[0-9A-Fa-f.:]+)\]:\d+: Connection (?:closed|reset) by peer"  # Gloo
    r"|Connection closed by remote peer (?P<c>[\w.:-]+)<\d+>"  # NCCL's socket transport
    r"|Call to (?:recv|send) (?:from|to) (?P<d>[\w.:-]+)<\d+> failed : [\w ]+"  # NCCL's socket transport
    r"|Got completion from peer (?P<e>[\w.:-]+)<\d+> with error \d+"  # NCCL over InfiniBand
)
# Gloo's receive or send that timed out (or the pair it closed for that); NCCL's watchdog line for a collective that
# timed out
_RECV_TIMEOUT = re.compile(
    r"Timed out waiting (?P<ms>\d+)ms for (?:recv|send) operation[\w ]*"
    r"|Application timeout caused pair closure"
    r"|Watchdog caught collective operation timeout: WorkNCCL\(.*?\) ran for (?P<nccl_ms>\d+) milliseconds"
)


@dataclass(frozen=True)
class JobNodes:
    addresses: dict[int, str]  # node rank -> its address (host name, or --local-addr)
    this_node: int
    per_node: int  # ranks on every node
    store: int | None = None  # the node that hosts the rendezvous store, where it is one of them

    def ranks(self, node: int) -> list[int]:
        return list(range(node * self.per_node, (node + 1) * self.per_node))

    def others(self) -> list[int]:
        return sorted(n for n in self.addresses if n != self.this_node)

    def node_at(self, peer: str) -> int | None:
        """The node whose address is `peer` (an address or a host name), resolves to it, or has its short name."""
        for node, address in self.addresses.items():
            if peer in (address, _resolved(address)) or _short(peer) == _short(address):
                return node
        return None

    def lost(self, nodes: list[int]) -> tuple[LostNode, ...]:
        return tuple(LostNode(self.addresses[n], tuple(self.ranks(n)), n == self.store) for n in nodes)


def _short(name: str) -> str:
    """A host name without its domain; an address as it is."""
    try:
        ipaddress.ip_address(name)
        return name
    except ValueError:
        return name.split(".")[0]


@functools.lru_cache(maxsize=256)
def _resolved(address: str) -> str | None:
    try:
        return socket.gethostbyname(address)
    except OSError:
        return None


@dataclass(frozen=True)
class FailedRank:
    """What lost_peers reads of one of this node's ranks."""

    rank: int
    message: str  # its recorded error's line
    account: HangEvidence | None
    log: str = ""  # its stderr, where NCCL writes which peer's connection went


def lost_peers(ranks: list[FailedRank], nodes: JobNodes | None, timeout_s: float | None = None) -> LostHost | None:
    """Where this node's ranks failed because another host went: its name and ranks, how the connection went (the
    backend's words) and where this node's ranks were; None when nothing says a host was lost. `timeout_s`: the
    collectives' timeout, for the backend's words that give none."""
    if nodes is None or len(nodes.addresses) < 2:
        return None
    closed: dict[int, str] = {}  # node -> the backend's words
    for failed in ranks:
        found = _PEER_WORDS.search(failed.message) or _PEER_WORDS.search(failed.log)
        peer = next((v for v in found.groupdict().values() if v), "") if found else ""
        node = nodes.node_at(peer) if found else None
        if found and node is not None and node != nodes.this_node:
            closed.setdefault(node, found.group(0))
    silent_s: float | None = None
    if closed:
        lost = sorted(closed)
        said = closed[lost[0]]
    else:
        timed_out = [found for f in ranks if (found := _RECV_TIMEOUT.search(f.message))]
        waiting = all(f.account is not None and f.account.inside is not None for f in ranks)
        if not timed_out or not waiting or len(timed_out) < len(ranks):
            return None
        lost, found = nodes.others(), timed_out[0]
        ms = found.group("ms") or found.group("nccl_ms")
        silent_s = int(ms) / 1000 if ms else timeout_s or 0.0
        said = found.group(0).strip()
    where = next((f.account for f in sorted(ranks, key=lambda f: f.rank) if _said_where(f.account)), None)
    return LostHost(nodes.addresses.get(nodes.this_node, ""), nodes.lost(lost), said, silent_s, where)


def _said_where(account: HangEvidence | None) -> bool:
    """The account says which collective its rank waits in, or which it called last."""
    return account is not None and (account.inside is not None or bool(account.collectives))
