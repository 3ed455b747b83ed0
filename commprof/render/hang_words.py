"""A hang's facts (results/failure_facts.Parting, Behind) in one sentence, and the pieces other failures' words use:
a collective, the line that called it, its tensors.

"rank 1 is at train.py:27 in main (time.sleep(3600)), outside any collective, after step 3; rank 0 has waited 9 s
in all_reduce #4 of the default group (1 tensor of 272 Float, 1.1 KB) at train.py:30 in main (loss.backward())"."""

from __future__ import annotations

import math

from commprof.results.failure_facts import Behind, Hang, Mismatch, Side
from commprof.results.hang import MPI_GROUP_DESC, EnteredCollective, HangEvidence, StackFrame
from commprof.trace.rules import dtype_size
from commprof.values import human_bytes

SHOWN = 3  # ranks named one by one; the rest are counted
MISMATCH: dict[Mismatch, str] = {
    "op": "different collectives at the same position",
    "dtype": "the same collective with different dtypes",
    "only_some_met": "a collective that only some ranks run, met by another",
    "shape": "the same collective with tensors of different shapes",
}


def hang_text(hang: Hang) -> str:
    """One sentence: where the ranks' collectives part; else who is behind and where, and who waits in what."""
    if not isinstance(hang, Behind):
        where = f"the ranks' collectives part at #{hang.seq} of {group_text(hang.first.call)}"
        first, second = _side(hang.first, hang.lines_known), _side(hang.second, hang.lines_known)
        return f"{where}: {first} where {second}: {MISMATCH[hang.mismatch]}"
    if hang.ahead is None:
        return "; ".join(_place(e) for e in hang.behind[:SHOWN]) + _more(len(hang.behind))
    parts = [_place(e) for e in hang.behind[:SHOWN]]
    if hang.behind:
        parts[-1] += _more(len(hang.behind))
    if hang.waiting:
        parts.append(_waiting(list(hang.waiting), hang.ahead))
    if not hang.behind:
        parts.append("no rank of this node is behind: a rank on another node, or the link to it, is")
    return "; ".join(parts)


def diagnosis_text(hang: Hang, ranks: int) -> str:
    """`commprof diagnose`'s line: the hang, and from how many ranks' evidence."""
    return f"{hang_text(hang)} (from the evidence of {ranks} rank{'s' if ranks != 1 else ''})"


def _side(side: Side, lines_known: bool) -> str:
    ranks, call = side.ranks, side.call
    who = f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {', '.join(map(str, ranks))}"
    # a watchdog's log line has neither dtype nor caller
    called = f" {site_text(call.site)}" if lines_known and (call.site is not None or call.dtypes) else ""
    return f"{who} ran {call.op} of {tensors_text(call)}{called}"


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


def waiting_text(evidence: HangEvidence) -> str | None:
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
    return f"{entered.op}{number} of {group_text(entered)}"


def _called(entered: EnteredCollective) -> str:
    return f"{collective_text(entered)} {site_text(entered.site)}"


def group_text(entered: EnteredCollective) -> str:
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
