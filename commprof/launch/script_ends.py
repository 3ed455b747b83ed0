"""A job whose ranks ran different numbers of steps: a rank finished its script while another still ran its
collectives. Under torchrun the finished rank exits 0 and the other fails ("Connection closed by peer") or times out;
under commprof the same happens (worker/script_end.py), and the one line says why: which rank finished, after which
step, with which exit status, what the other waits in, and what to do."""

from __future__ import annotations

import re

from commprof.launch.faults import RankOutcome
from commprof.launch.hang_evidence import site_text
from commprof.results.script_ended import ScriptEnded

ADVICE = (
    "the ranks ran different numbers of steps: give every rank as many batches (equal shards, e.g. "
    "DistributedSampler(..., drop_last=True)) or wrap the loop in DDP's Join context manager "
    "(torch.distributed.algorithms.join.Join)"
)


def ended_early(ended: dict[int, ScriptEnded], outcomes: list[RankOutcome], host: str) -> str | None:
    """The line, where a rank whose script returned (exit 0) left because another waited for it in a collective and
    no rank failed on its own; else None."""
    left = sorted((e for e in ended.values() if e.left_because and " waits in " in e.left_because), key=_rank)
    by_rank = {o.rank: o for o in outcomes}
    if not left or any(o.kind in ("error", "killed") for o in outcomes if o.rank not in ended):
        return None
    first = left[0]
    status = by_rank[first.rank].exitcode if first.rank in by_rank else 0
    who = f"rank {first.rank}" if len(left) == 1 else f"ranks {', '.join(str(e.rank) for e in left)}"
    waiting = first.left_because or ""
    waiter = _waiter(waiting, outcomes)
    site = _site(waiter)
    ending = f", and then failed: {_plain(waiter.message)}" if waiter is not None and waiter.message else ""
    return (
        f"{who} on {host} finished {'its' if len(left) == 1 else 'their'} script after {first.steps} steps (exit "
        f"{status if status is not None else 0}) while {waiting}{site}{ending}; {ADVICE}"
    )


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


def _site(waiter: RankOutcome | None) -> str:
    """The script's line that called the collective the rank waited in, from its account."""
    if waiter is None or waiter.account is None:
        return ""
    last = max(waiter.account.collectives, key=lambda c: c.seq, default=None)
    return f" {site_text(last.site)}" if last is not None and last.site is not None else ""
