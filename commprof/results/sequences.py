"""Each rank's collectives over a whole run, as its Flight Recorder held them when the script ended: a desync the
backend let pass is found by comparing them.

Gloo and NCCL compare no dtypes: ranks that all-reduce the same number of bytes as float32 on one rank and int32 on
another run to the end without an error, the result garbage. A rank keeps, per process group, each collective's
call (op, shapes, dtypes) in sequence order, the distinct calls once (a training loop repeats a handful); the
launcher compares the ranks' sequences where they overlap, and the first position where the calls differ is told
as a hang's parting is (launch/hang_evidence.py), into the report's warnings. Torch's dump without stack traces
takes ~0.1 s for its 2000 entries; with them, seconds: the calling lines are not kept."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from commprof.results.hang import EnteredCollective, HangEvidence, recent_collectives


@dataclass(frozen=True)
class Call:
    op: str
    sizes: list[list[int]]
    dtypes: list[str]


@dataclass(frozen=True)
class GroupSequence:
    """One process group's collectives on one rank: sequence numbers first_seq, first_seq + 1, ..., each a
    position in `distinct`."""

    group: str
    group_desc: str
    first_seq: int
    calls: list[int] = field(default_factory=list)
    distinct: list[Call] = field(default_factory=list)

    def call(self, seq: int) -> Call | None:
        at = seq - self.first_seq
        return self.distinct[self.calls[at]] if 0 <= at < len(self.calls) else None


def sequences_of(dump: dict[str, Any]) -> list[GroupSequence]:
    """Per process group, the collectives of a Flight Recorder dump (every entry it holds), in sequence order."""
    by_group: dict[str, list[EnteredCollective]] = {}
    for collective in recent_collectives(dump, per_group=len(dump.get("entries", []))):
        by_group.setdefault(collective.group, []).append(collective)
    sequences = []
    for group, entered in sorted(by_group.items()):
        distinct: list[Call] = []
        calls = []
        for collective in entered:
            call = Call(collective.op, collective.sizes, collective.dtypes)
            if call not in distinct:
                distinct.append(call)
            calls.append(distinct.index(call))
        first = entered[0].seq
        if [c.seq for c in entered] == list(range(first, first + len(entered))):  # a gap: not comparable
            sequences.append(GroupSequence(group, entered[0].group_desc, first, calls, distinct))
    return sequences


def first_parting(ranks: dict[int, list[GroupSequence]]) -> dict[int, HangEvidence]:
    """The ranks' calls at the first sequence number (of the first group, by name) where they differ, as evidence
    for hang_evidence.where_they_part; empty when every overlapping position agrees."""
    groups = sorted({s.group for sequences in ranks.values() for s in sequences})
    for group in groups:
        held = {rank: s for rank, sequences in ranks.items() for s in sequences if s.group == group}
        if len(held) < 2:
            continue
        start = max(s.first_seq for s in held.values())
        end = min(s.first_seq + len(s.calls) for s in held.values())
        for seq in range(start, end):
            calls = {rank: s.call(seq) for rank, s in held.items()}
            if not _agree(list(calls.values())):
                return {
                    rank: HangEvidence(rank, "", None, 0.0, 0.0, collectives=[_entered(held[rank], seq, call)])
                    for rank, call in calls.items()
                    if call is not None
                }
    return {}


# collectives in which only the root holds the list (scatter's inputs, gather's outputs): the others' side is empty
ROOTED = frozenset({"scatter", "gather"})


def _agree(calls: list[Call | None]) -> bool:
    """The ranks ran the same collective: the same op, shapes and dtypes; of a rooted one, the same op, the ranks that
    hold tensors on its side the same (the root's list against the others' none is no parting)."""
    if len({repr(c) for c in calls}) == 1:
        return True
    known = [c for c in calls if c is not None]
    if len(known) < len(calls) or len({c.op for c in known}) > 1 or known[0].op not in ROOTED:
        return False
    holding = [c for c in known if any(math.prod(size) for size in c.sizes)]
    return len({repr(c) for c in holding}) <= 1


def _entered(sequence: GroupSequence, seq: int, call: Call) -> EnteredCollective:
    return EnteredCollective(
        sequence.group, sequence.group_desc, seq, call.op, call.sizes, call.dtypes, completed=True, entered_s=0.0
    )
