"""A rank Gloo aborted because a peer's collective sent it another number of bytes than its own expected, said with
each rank's tensors where commprof saw them: the ranks' accounts (results/hang.py) hold the collectives each last
entered, with their line, op, sequence number and tensors.

Gloo's two numbers are those of one piece of the transfer (it cuts a collective into pieces: 1,000 floats against 999
on 2 ranks are 1000 bytes against 996), never the tensors' sizes, and are named as such. The aborted rank seldom
leaves an account (Gloo aborts it from a thread of its own, with no time to write one): its own collective is known
only where it had waited in it long enough to write the account of a stall. A peer's is the one with the same
sequence number where the aborted rank's is known, else its latest from the same line.

"its collective at train.py:38 in main (dist.all_reduce(t)): rank 0's all_reduce #9 of the default group had 1 tensor
of 1,000 Float, 3.906 KiB where rank 1's had 1 tensor of 999 Float, 3.902 KiB: tensors that differ between the
ranks"."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from commprof.launch.hang_evidence import collective_text, site_text, tensors_text
from commprof.results.hang import EnteredCollective, HangEvidence, StackFrame

DIFFERENT_TENSORS = "tensors that differ between the ranks"
ONLY_SOME = "a collective that only some ranks run"
EITHER = f"{ONLY_SOME}, or tensors that differ"


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


def parted_text(parted: Parted, rank: int, outcomes: Sequence[RankEnd]) -> str:
    """What the aborted `rank`'s collective and a peer's were (op, sequence number, tensors), from their accounts, and
    the kind of mismatch; what no account holds is said not to be known, with Gloo's piece, and the kind then rests on
    the peer's line (its last collectives, its recorded traceback, where it was stopped)."""
    site = parted.site
    said = f"its collective {site_text(site)}" if site is not None else "its collective"
    own = next((o for o in outcomes if o.rank == rank), None)
    mine = _own_call(own, site) or _entering(own, site)
    unknown = f"rank {rank}'s tensors are not known ({_why_unknown(own)}; Gloo aborted it on a piece of "
    unknown += f"{parted.sent} bytes where it expected {parted.expected})"
    peers = sorted((o for o in outcomes if o.rank != rank), key=lambda o: o.rank)
    for peer in peers:
        theirs = _paired(peer, mine, site)
        if theirs is not None and mine is not None:
            first, second = sorted([(rank, mine), (peer.rank, theirs)], key=lambda side: side[0])
            return f"{said}: {_call(*first, site)} where {_call(*second, site, after=first[1])}: {_kind(mine, theirs)}"
        if theirs is not None:
            same_line = f"rank {peer.rank}'s {collective_text(theirs)} from the same line had {tensors_text(theirs)}"
            return f"{said}: {same_line}; {unknown}: {DIFFERENT_TENSORS}"
    for peer in peers:
        at = peer.own_line
        if site is not None and at is not None and (at.file, at.line) == _site_key(site):
            if mine is not None:
                known = _call(rank, mine, site)
                return f"{said}: {known}; {_peer_unknown(peer, mine)}, but it was at the same line: {DIFFERENT_TENSORS}"
            return f"{said}: rank {peer.rank} was at the same line; {unknown}: {DIFFERENT_TENSORS}"
    entered = next((p for p in peers if p.account is not None and p.account.collectives), None)
    if mine is not None and not mine.seq and site is not None and entered is not None and entered.account is not None:
        count = len(entered.account.collectives)  # its own call from its record; none of the peer's from that line
        none = f"none of rank {entered.rank}'s last {count} collectives was called from that line"
        return f"{said}: {_call(rank, mine, site)}; {none}: {ONLY_SOME}"
    if mine is not None:
        peer_said = f"; {_peer_unknown(peers[0], mine)}" if peers else ""
        return f"{said}: {_call(rank, mine, site)}{peer_said}: {EITHER}"
    if site is not None and entered is not None and entered.account is not None:
        count = len(entered.account.collectives)
        return (
            f"{said}: none of rank {entered.rank}'s last {count} collectives was called from that line; {unknown}: "
            f"{ONLY_SOME}"
        )
    return f"{said}: {unknown}: {EITHER}"


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


def _call(rank: int, call: EnteredCollective, site: StackFrame | None, after: EnteredCollective | None = None) -> str:
    """`rank 0's all_reduce #9 of the default group had 1 tensor of 1,000 Float, 3.906 KiB`, its line named where it is
    not the aborted rank's; after another of the same op, number and line, `rank 1's had ...`."""
    elsewhere = call.site is not None and site is not None and _site_key(call.site) != _site_key(site)
    numbered = after is not None and (after.seq == call.seq or 0 in (after.seq, call.seq))  # 0: not known
    same = after is not None and numbered and (after.op, after.group) == (call.op, call.group)
    what = "" if same and not elsewhere else f" {collective_text(call)}"
    at = f" {site_text(call.site)}" if elsewhere else ""
    return f"rank {rank}'s{what}{at} had {tensors_text(call)}"


def _kind(mine: EnteredCollective, theirs: EnteredCollective) -> str:
    if mine.op != theirs.op:
        return "different collectives at the same position"
    if mine.site is not None and theirs.site is not None and _site_key(mine.site) != _site_key(theirs.site):
        return f"{ONLY_SOME}, met by another"
    return DIFFERENT_TENSORS


def _why_unknown(own: RankEnd | None) -> str:
    if own is None or own.account is None:
        return "it wrote no account"
    return "its account was written before it entered it"


def _peer_unknown(peer: RankEnd, mine: EnteredCollective) -> str:
    if peer.account is None:
        return f"rank {peer.rank}'s tensors are not known (it wrote no account)"
    if not mine.seq:
        return f"rank {peer.rank}'s tensors are not known (its account holds no call from that line)"
    return f"rank {peer.rank}'s tensors are not known (its account holds no #{mine.seq} of that group)"
