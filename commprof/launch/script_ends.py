"""A job whose ranks ran different numbers of steps: a rank finished its script while another still ran its
collectives. Under torchrun the finished rank exits 0 and the other fails ("Connection closed by peer") or times out;
under commprof the same happens (worker/script_end.py), and the one line says why: which rank finished, after which
step, with which exit status, what the other waits in (results/failure_facts.EndedEarly)."""

from __future__ import annotations

import re

from commprof.launch.faults import RankOutcome
from commprof.results.failure_facts import EndedEarly
from commprof.results.hang import StackFrame
from commprof.results.script_ended import ScriptEnded


def ended_early(ended: dict[int, ScriptEnded], outcomes: list[RankOutcome], host: str) -> EndedEarly | None:
    """Where a rank whose script returned (exit 0) left because another waited for it in a collective and no rank
    failed on its own; else None."""
    left = sorted((e for e in ended.values() if e.left_because and " waits in " in e.left_because), key=_rank)
    by_rank = {o.rank: o for o in outcomes}
    if not left or any(o.kind in ("error", "killed") for o in outcomes if o.rank not in ended):
        return None
    first = left[0]
    status = by_rank[first.rank].exitcode if first.rank in by_rank else 0
    waiting = first.left_because or ""
    waiter = _waiter(waiting, outcomes)
    failed = _plain(waiter.message) if waiter is not None and waiter.message else ""
    ranks = tuple(e.rank for e in left)
    return EndedEarly(ranks, host, first.steps, status or 0, waiting, _site(waiter), failed)


def _plain(message: str) -> str:
    """An error's words without the source location and peer address a backend adds."""
    message = re.sub(r"^\w+Error: ", "", message)
    message = re.sub(r"\[[^\]]*\.(cc|cpp|h):\d+\]\s*", "", message)
    return re.sub(r"\s*\[[\d.:a-f]+\]:\d+", "", message).rstrip(". ")


def _rank(ended: ScriptEnded) -> int:
    return ended.rank


def _waiter(waiting: str, outcomes: list[RankOutcome]) -> RankOutcome | None:
    """The rank the line `rank N waits in ...` names, among this node's outcomes."""
    words = waiting.split()
    rank = int(words[1]) if len(words) > 1 and words[1].isdigit() else None
    return next((o for o in outcomes if o.rank == rank), None)


def _site(waiter: RankOutcome | None) -> StackFrame | None:
    """The script's line that called the collective the rank waited in, from its account."""
    if waiter is None or waiter.account is None:
        return None
    last = max(waiter.account.collectives, key=lambda c: c.seq, default=None)
    return last.site if last is not None else None
