"""A hang told from what each rank wrote while it was stuck (results/hang.py): where the ranks' collectives part and
how (another op, dtype or shape at the same sequence number), or else which ranks are behind and where their code
is, and which collective the others wait in and for how long.

"rank 1 is at train.py:27 in main (time.sleep(3600)), outside any collective, after step 3; rank 0 has waited 9 s
in all_reduce #4 of the default group (1 tensor of 272 Float, 1.1 KB) at train.py:30 in main (loss.backward())"."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

from commprof.launch.flight_recorder import BUFFER_SIZE
from commprof.results.hang import FOLDER_VARIABLE, MPI_GROUP_DESC, EnteredCollective, HangEvidence, StackFrame
from commprof.trace.rules import dtype_size
from commprof.values import human_bytes

SHOWN = 3  # ranks named one by one; the rest are counted


def hang_evidence_environment(folder: Path) -> dict[str, str]:
    """What every rank needs to write its evidence into `folder`: the folder, and torch's Flight Recorder on (for
    Gloo as for NCCL; a dump is taken only on request)."""
    return {FOLDER_VARIABLE: str(folder), "TORCH_FR_BUFFER_SIZE": BUFFER_SIZE}


def describe_hang(evidence: Mapping[int, HangEvidence]) -> str | None:
    """One sentence for the ranks of this node that wrote evidence, or None when none did: where their collectives
    part, if they do; else who is behind and who waits."""
    if not evidence:
        return None
    parted = where_they_part(evidence)
    if parted:
        return parted
    ahead = _furthest(evidence)
    behind = [e for e in evidence.values() if ahead is None or _behind(e, ahead)]
    waiting = [e for e in evidence.values() if e not in behind]
    if ahead is None:  # no Flight Recorder: where each rank is, the fewest steps first
        ranks = sorted(evidence.values(), key=lambda e: (e.steps_done or 0, e.rank))
        return "; ".join(_place(e) for e in ranks[:SHOWN]) + _more(len(ranks))
    parts = [_place(e) for e in sorted(behind, key=lambda e: e.rank)[:SHOWN]]
    if behind:
        parts[-1] += _more(len(behind))
    if waiting:
        parts.append(_waiting(sorted(waiting, key=lambda e: e.rank), ahead))
    if not behind:
        parts.append("no rank of this node is behind: a rank on another node, or the link to it, is")
    return "; ".join(parts)


def where_they_part(evidence: Mapping[int, HangEvidence], lines_known: bool = True) -> str | None:
    """The first collective (lowest sequence number of a group) that two ranks entered with different ops, dtypes
    or shapes, said with each side's call and the kind of mismatch; None when every shared one matches.
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
                where = f"the ranks' collectives part at #{seq} of {_group(a)}"
                first, second = _side(ranks_a, a, lines_known), _side(ranks_b, b, lines_known)
                return f"{where}: {first} where {second}: {_kind(a, b)}"
    return None


def _side(ranks: list[int], call: EnteredCollective, lines_known: bool) -> str:
    who = f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {', '.join(map(str, ranks))}"
    # a watchdog's log line has neither dtype nor caller
    called = f" {site_text(call.site)}" if lines_known and (call.site is not None or call.dtypes) else ""
    return f"{who} ran {call.op} of {tensors_text(call)}{called}"


def _kind(a: EnteredCollective, b: EnteredCollective) -> str:
    if a.op != b.op:
        return "different collectives at the same position"
    if a.dtypes != b.dtypes:
        return "the same collective with different dtypes"
    if a.site is not None and b.site is not None and (a.site.file, a.site.line) != (b.site.file, b.site.line):
        return "a collective that only some ranks run, met by another"
    return "the same collective with tensors of different shapes"


def _furthest(evidence: Mapping[int, HangEvidence]) -> EnteredCollective | None:
    """The collective the ranks furthest ahead wait in (the highest sequence number of its group), or None when
    no rank waits in one."""
    inside = [e.inside for e in evidence.values() if e.inside is not None]
    return max(inside, key=lambda c: c.seq, default=None)


def _behind(evidence: HangEvidence, ahead: EnteredCollective) -> bool:
    pending = evidence.pending(ahead.group)
    return pending is None or pending.seq < ahead.seq


def _place(evidence: HangEvidence) -> str:
    """Where a rank behind is: its own code's line, and the collective it waits in, if any."""
    inside = evidence.inside
    after = f", after step {evidence.steps_done}" if evidence.steps_done is not None else ""
    last = max(evidence.collectives, key=lambda c: c.seq, default=None)
    if not evidence.stack and inside is None and last is not None:  # a dump: where its last collective was called
        return f"rank {evidence.rank} is outside any collective{after}; its last was {_called(last)}"
    what = f"waiting in {collective_text(inside)}" if inside else "outside any collective"
    at = _at(evidence)
    return f"rank {evidence.rank} is {at + ', ' if at else ''}{what}{after}"


def waiting_in(evidence: HangEvidence) -> str | None:
    """`rank 0 has waited 29 s in all_reduce #17 of the default group (...) at ...`; where it waits in none (the
    backend failed the collective), `rank 0's last collective was all_reduce #17 ...`; None where it entered none."""
    if evidence.inside is not None:
        return _waiting([evidence], evidence.inside)
    last = max(evidence.collectives, key=lambda c: c.entered_s, default=None)
    if last is None:
        return None
    tensors = f" ({tensors_text(last)})" if last.sizes else ""
    at = _at(evidence) if evidence.stack else site_text(last.site) if last.site else ""
    return f"rank {evidence.rank}'s last collective was {collective_text(last)}{tensors}{' ' + at if at else ''}"


def _waiting(ranks: list[HangEvidence], ahead: EnteredCollective) -> str:
    first = ranks[0]
    who = f"rank {first.rank}" if len(ranks) == 1 else f"ranks {', '.join(str(e.rank) for e in ranks)}"
    verb = "waits" if len(ranks) == 1 else "wait"
    if ahead.entered_s > 0:  # torch's Flight Recorder says when the collective was entered
        waited = max(0.0, first.taken_s - ahead.entered_s)
        verb = f"{'has' if len(ranks) == 1 else 'have'} waited {waited:.0f} s"
    tensors = f" ({tensors_text(ahead)})" if ahead.sizes else ""
    at = _at(first)
    return f"{who} {verb} in {collective_text(ahead)}{tensors}{' ' + at if at else ''}"


def _at(evidence: HangEvidence) -> str:
    frame = evidence.own_frame
    if frame is not None:
        return site_text(frame)
    ours = next((f for f in reversed(evidence.stack) if "/commprof/" in f.file), None)  # a built-in run's loop
    if ours is not None:
        return f"in commprof's {ours.function} ({_file(ours)}:{ours.line})"
    called = evidence.inside.site if evidence.inside else None  # a dump has no stack: the collective's caller
    if called is not None:
        return site_text(called)
    return "in code that is not the script's" if evidence.stack else ""  # a dump without its callers: nothing known


def _file(frame: StackFrame) -> str:
    return frame.file.rsplit("/", 1)[-1]


def collective_text(entered: EnteredCollective) -> str:
    """'all_reduce #9 of the default group'; its number left out where it is not known (0)."""
    number = f" #{entered.seq}" if entered.seq else ""
    return f"{entered.op}{number} of {_group(entered)}"


def _called(entered: EnteredCollective) -> str:
    return f"{collective_text(entered)} {site_text(entered.site)}"


def _group(entered: EnteredCollective) -> str:
    if entered.group_desc == MPI_GROUP_DESC:
        return f"MPI's {entered.group} (mpi4py)"
    return "the default group" if entered.group_desc == "default_pg" else f"process group {entered.group}"


def site_text(frame: StackFrame | None) -> str:
    if frame is None:
        return "(called from no code of the script's)"
    return f"at {_file(frame)}:{frame.line} in {frame.function}" + (f" ({frame.code})" if frame.code else "")


def tensors_text(entered: EnteredCollective) -> str:
    elements = [math.prod(shape) for shape in entered.sizes]
    if not entered.dtypes:  # NCCL's watchdog logs the element count alone
        return f"{sum(elements):,} element{'s' if sum(elements) != 1 else ''}"
    nbytes = sum(n * (dtype_size(d) or 0) for n, d in zip(elements, entered.dtypes, strict=False))
    dtypes = "/".join(sorted(set(entered.dtypes))) or "tensors"
    count = len(elements)
    size = f", {human_bytes(nbytes)}" if nbytes else ""
    return f"{count} tensor{'s' if count != 1 else ''} of {sum(elements):,} {dtypes}{size}"


def _more(count: int) -> str:
    return f" (and {count - SHOWN} more rank{'s' if count - SHOWN > 1 else ''})" if count > SHOWN else ""
