"""A hang told from what each rank wrote while it was stuck (results/hang.py): where the ranks' collectives part and
how (another op, dtype or shape at the same sequence number), or else which ranks are behind and which collective the
others wait in. The facts (results/failure_facts.py); render/hang_words.py says them."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from commprof.launch.flight_recorder import BUFFER_SIZE
from commprof.results.failure_facts import Behind, Hang, Mismatch, Parting, Side
from commprof.results.hang import FOLDER_VARIABLE, EnteredCollective, HangEvidence


def hang_evidence_environment(folder: Path) -> dict[str, str]:
    """What every rank needs to write its evidence into `folder`: the folder, and torch's Flight Recorder on (for
    Gloo as for NCCL; a dump is taken only on request)."""
    return {FOLDER_VARIABLE: str(folder), "TORCH_FR_BUFFER_SIZE": BUFFER_SIZE}


def describe_hang(evidence: Mapping[int, HangEvidence]) -> Hang | None:
    """The hang of the ranks of this node that wrote evidence, or None when none did: where their collectives part,
    if they do; else who is behind and who waits."""
    if not evidence:
        return None
    parted = where_they_part(evidence)
    if parted:
        return parted
    ahead = _furthest(evidence)
    if ahead is None:  # no Flight Recorder: where each rank is, the fewest steps first
        return Behind(tuple(sorted(evidence.values(), key=lambda e: (e.steps_done or 0, e.rank))), (), None)
    behind = [e for e in evidence.values() if _behind(e, ahead)]
    waiting = [e for e in evidence.values() if e not in behind]
    return Behind(tuple(sorted(behind, key=lambda e: e.rank)), tuple(sorted(waiting, key=lambda e: e.rank)), ahead)


def where_they_part(evidence: Mapping[int, HangEvidence], lines_known: bool = True) -> Parting | None:
    """The first collective (lowest sequence number of a group) that two ranks entered with different ops, dtypes
    or shapes, with each side's call and the kind of mismatch; None when every shared one matches.
    `lines_known`: the evidence kept the line of the script that called each collective, where it had one."""
    groups = sorted({c.group for e in evidence.values() for c in e.collectives})
    for group in groups:
        seqs = sorted({c.seq for e in evidence.values() for c in e.collectives if c.group == group})
        for seq in seqs:
            calls = {r: c for r, e in sorted(evidence.items()) if (c := e.entered(group, seq)) is not None}
            sides: list[tuple[list[int], EnteredCollective]] = []
            for rank, call in calls.items():
                side = next((s for s in sides if s[1].same_call(call)), None)
                if side is None:
                    sides.append(([rank], call))
                else:
                    side[0].append(rank)
            if len(sides) > 1:
                (ranks_a, a), (ranks_b, b) = sides[:2]
                return Parting(seq, Side(tuple(ranks_a), a), Side(tuple(ranks_b), b), _mismatch(a, b), lines_known)
    return None


def _mismatch(a: EnteredCollective, b: EnteredCollective) -> Mismatch:
    if a.op != b.op:
        return "op"
    if a.dtypes != b.dtypes:
        return "dtype"
    if a.site is not None and b.site is not None and (a.site.file, a.site.line) != (b.site.file, b.site.line):
        return "only_some_met"
    return "shape"


def _furthest(evidence: Mapping[int, HangEvidence]) -> EnteredCollective | None:
    """The collective the ranks furthest ahead wait in (the highest sequence number of its group), or None when
    no rank waits in one."""
    inside = [e.inside for e in evidence.values() if e.inside is not None]
    return max(inside, key=lambda c: c.seq, default=None)


def _behind(evidence: HangEvidence, ahead: EnteredCollective) -> bool:
    pending = evidence.pending(ahead.group)
    return pending is None or pending.seq < ahead.seq
