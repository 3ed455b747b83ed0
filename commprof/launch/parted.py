"""A rank Gloo aborted because a peer's collective sent it another number of bytes than its own expected, with each
rank's tensors where commprof saw them: the ranks' accounts (results/hang.py) hold the collectives each last entered,
with their line, op, sequence number and tensors. The facts (results/failure_facts.GlooParted); render/failure_words.py
says them.

Gloo's two numbers are those of one piece of the transfer (it cuts a collective into pieces: 1,000 floats against 999
on 2 ranks are 1000 bytes against 996), never the tensors' sizes. The aborted rank seldom leaves an account (Gloo
aborts it from a thread of its own, with no time to write one): its own collective is known only where it had waited
in it long enough to write the account of a stall, or from the record it wrote as it called it. A peer's is the one
with the same sequence number where the aborted rank's is known, else its latest from the same line."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from msgspec.structs import replace

from commprof.results.failure_facts import GlooParted, PartedKind, Unknown
from commprof.results.hang import EnteredCollective, HangEvidence, StackFrame


@dataclass(frozen=True)
class Parted:
    """Gloo aborted a rank whose collective expected a piece of `expected` bytes where a peer sent `sent`; `site`: the
    line of the user's code its main thread was calling."""

    sent: int
    expected: int
    site: StackFrame | None


class RankEnd(Protocol):
    """What this needs of a rank's end (launch/faults.py's RankOutcome)."""

    @property
    def rank(self) -> int: ...
    @property
    def account(self) -> HangEvidence | None: ...  # what it wrote of itself (results/hang.py)
    @property
    def own_line(self) -> StackFrame | None: ...  # its own code's line where its error was raised or it was stopped
    @property
    def entering(self) -> EnteredCollective | None: ...  # the collective it last called (instrument/entering.py)


def parted_facts(parted: Parted, rank: int, outcomes: Sequence[RankEnd]) -> GlooParted:
    """What the aborted `rank`'s collective and a peer's were (op, sequence number, tensors), from their accounts, and
    the kind of mismatch; where no account holds a call, why, and the kind then rests on the peer's line (its last
    collectives, its recorded traceback, where it was stopped)."""
    site = parted.site
    own = next((o for o in outcomes if o.rank == rank), None)
    mine = _own_call(own, site) or _entering(own, site)
    known = GlooParted(rank, parted.sent, parted.expected, site, "unknown", "either", mine, _why_unknown(own))
    peers = sorted((o for o in outcomes if o.rank != rank), key=lambda o: o.rank)
    for peer in peers:
        theirs = _paired(peer, mine, site)
        if theirs is not None and mine is not None:
            return replace(known, case="paired", kind=_kind(mine, theirs), peer=peer.rank, theirs=theirs)
        if theirs is not None:
            return replace(known, case="theirs", kind="tensors", peer=peer.rank, theirs=theirs)
    for peer in peers:
        at = peer.own_line
        if site is not None and at is not None and (at.file, at.line) == _site_key(site):
            unknown = _peer_unknown(peer, mine) if mine is not None else ""
            return replace(known, case="same_line", kind="tensors", peer=peer.rank, peer_unknown=unknown)
    entered = next((p for p in peers if p.account is not None and p.account.collectives), None)
    calls = len(entered.account.collectives) if entered is not None and entered.account is not None else 0
    if mine is not None and not mine.seq and site is not None and entered is not None:
        # its own call from its record; none of the peer's from that line
        return replace(known, case="none_from_line", kind="only_some", peer=entered.rank, peer_calls=calls)
    if mine is not None:
        if not peers:
            return replace(known, case="mine")
        return replace(known, case="mine", peer=peers[0].rank, peer_unknown=_peer_unknown(peers[0], mine))
    if site is not None and entered is not None:
        return replace(known, case="none_from_line", kind="only_some", peer=entered.rank, peer_calls=calls)
    return known


def _site_key(frame: StackFrame) -> tuple[str, int]:
    return frame.file, frame.line


def _own_call(own: RankEnd | None, site: StackFrame | None) -> EnteredCollective | None:
    """The aborted rank's own collective, from its account: one it had entered and not completed, from the line it was
    aborted at (the latest such), or the one it waited in where that line is not known."""
    if own is None or own.account is None:
        return None
    if site is None:
        return own.account.inside
    here = _site_key(site)
    waiting = [c for c in own.account.collectives if not c.completed and c.site and _site_key(c.site) == here]
    return max(waiting, key=lambda c: c.seq, default=None)


def _entering(own: RankEnd | None, site: StackFrame | None) -> EnteredCollective | None:
    """The aborted rank's collective from the record it wrote as it called it (its sequence number not known there),
    called from the line Gloo aborted it at."""
    if own is None or own.entering is None:
        return None
    return dataclasses.replace(own.entering, site=site or own.entering.site)


def _paired(peer: RankEnd, mine: EnteredCollective | None, site: StackFrame | None) -> EnteredCollective | None:
    """The peer's collective that met the aborted rank's: the same sequence number of the same group where that is
    known; else its latest called from the same line (of the same group, where the group is known)."""
    if peer.account is None:
        return None
    if mine is not None and mine.seq:
        return peer.account.entered(mine.group, mine.seq)
    if site is None:
        return None
    same = [
        c
        for c in peer.account.collectives
        if c.site is not None and _site_key(c.site) == _site_key(site) and (mine is None or c.group == mine.group)
    ]
    return max(same, key=lambda c: (c.entered_s, c.seq), default=None)


def _kind(mine: EnteredCollective, theirs: EnteredCollective) -> PartedKind:
    if mine.op != theirs.op:
        return "op"
    if mine.site is not None and theirs.site is not None and _site_key(mine.site) != _site_key(theirs.site):
        return "only_some_met"
    return "tensors"


def _why_unknown(own: RankEnd | None) -> Unknown:
    return "no_account" if own is None or own.account is None else "before"


def _peer_unknown(peer: RankEnd, mine: EnteredCollective) -> Unknown:
    if peer.account is None:
        return "no_account"
    return "no_line" if not mine.seq else "no_seq"
