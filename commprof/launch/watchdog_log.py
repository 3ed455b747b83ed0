"""NCCL's watchdog in a job's log: what each rank's ProcessGroupNCCL wrote when a collective timed out, read as that
rank's account of the hang (results/hang.py), for `commprof diagnose` of a job commprof did not launch.

torch logs (ProcessGroupNCCL.cpp), each line prefixed with the global rank where the job's launcher or torch adds it:

    [rank1]:[E1218 20:27:21.433063423 ProcessGroupNCCL.cpp:629] [Rank 1] Watchdog caught collective operation
    timeout: WorkNCCL(SeqNum=1, OpType=BROADCAST, NumelIn=131072000, NumelOut=131072000, Timeout(ms)=600000) ran
    for 600088 milliseconds before timing out.
    [rank1]:[E1218 ...] [PG ID 1 PG GUID 1 Rank 1]  failure detected by watchdog at work sequence id: 1 PG status:
    last enqueued work: 547, last completed work: -1

(newer versions put "[PG ID 0 PG GUID 0(default_pg) Rank 1]" before "Watchdog caught" itself). A rank that logged
other lines but no timeout had nothing pending: it never entered the collective the others wait in. The log gives
no dtype, shape or calling line; the number of elements is NumelIn."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from commprof.results.hang import EnteredCollective, HangEvidence

_GLOBAL_RANK = re.compile(r"\[rank(\d+)\]:")
_GLOG_TIME = re.compile(r"\[[EWIF](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.(\d+)")
# "[PG 1 Rank 0]", "[PG ID 0 PG GUID 0(default_pg) Rank 1]": the group's id, its description, the rank in it
_GROUP = re.compile(r"\[PG (?:ID )?(\w+)(?: PG GUID [^\s(\]]+(?:\(([^)]*)\))?)? Rank (\d+)\]")
_TIMEOUT = re.compile(
    r"(?:\[Rank (\d+)\] )?Watchdog caught collective operation timeout: WorkNCCL\(SeqNum=(\d+), OpType=(\w+)"
    r"(?:, NumelIn=(\d+))?.*?\) ran for (\d+) milliseconds"
)
_QUOTED = ("terminated with exception", "what():")  # the same timeout again, inside the exception it raised
_STATUS = re.compile(r"detected by watchdog at work(?: sequence id)?: (\d+)")
_OPS = {"ALLREDUCE": "all_reduce", "ALLGATHER": "all_gather", "REDUCE_SCATTER": "reduce_scatter"}
_OPS |= {"ALLTOALL": "all_to_all", "ALLTOALL_BASE": "all_to_all", "_ALLGATHER_BASE": "all_gather"}
_OPS |= {"_REDUCE_SCATTER_BASE": "reduce_scatter", "ALLGATHER_COALESCED": "all_gather"}


@dataclass(frozen=True)
class _Timeout:
    rank: int
    group: tuple[str, str] | None  # (id, description) where the line names it
    seq: int
    op: str
    elements: int | None  # NumelIn; older versions do not log it
    waited_s: float
    logged_s: float  # when it was logged (glog's stamp has no year: only differences mean anything)


def read_watchdog_log(path: Path) -> dict[int, HangEvidence]:
    """rank -> its account, for a log holding at least one watchdog timeout (else empty): each rank that timed out
    waits in the collective it names; a rank that logged (its `[rankN]:` prefix) without one waits in none."""
    timeouts: dict[tuple[int, int, str], _Timeout] = {}
    groups: dict[tuple[int, int], tuple[str, str]] = {}  # (rank, seq) -> the group its status line names
    ranks_seen: set[int] = set()
    with path.open(errors="replace") as log:
        for line in log:
            prefix, group = _GLOBAL_RANK.search(line), _GROUP.search(line)
            if prefix:
                ranks_seen.add(int(prefix.group(1)))
            rank = int(prefix.group(1)) if prefix else None
            status = _STATUS.search(line)
            if group and status:
                groups[(rank if rank is not None else int(group.group(3)), int(status.group(1)))] = _group(group)
            timeout = _TIMEOUT.search(line)
            if timeout is None or any(q in line for q in _QUOTED):
                continue
            if rank is None:  # a rank in its group: the global one in the default group
                rank = int(timeout.group(1) or (group.group(3) if group else 0))
            seq, op = int(timeout.group(2)), _op(timeout.group(3))
            elements = int(timeout.group(4)) if timeout.group(4) else None
            named = _group(group) if group and group.start() < timeout.start() else None
            waited = int(timeout.group(5)) / 1000
            timeouts.setdefault((rank, seq, op), _Timeout(rank, named, seq, op, elements, waited, _logged_s(line)))
    if not timeouts:
        return {}
    accounts = {rank: HangEvidence(rank, "", None, 0.0, 0.0) for rank in ranks_seen}
    for t in timeouts.values():
        name, desc = t.group or groups.get((t.rank, t.seq), ("0", ""))
        logged = t.logged_s or t.waited_s + 1  # no stamp: each rank's wait, as it said it
        entered = EnteredCollective(
            group=name,
            group_desc=desc or ("default_pg" if name == "0" else ""),
            seq=t.seq,
            op=t.op,
            sizes=[[t.elements]] if t.elements is not None else [],
            dtypes=[],
            completed=False,
            entered_s=logged - t.waited_s,
        )
        known = accounts.get(t.rank, HangEvidence(t.rank, "", None, 0.0, 0.0))
        accounts[t.rank] = HangEvidence(
            t.rank, "", None, max(known.taken_s, logged), 0.0, collectives=[*known.collectives, entered]
        )
    return accounts


def _group(match: re.Match[str]) -> tuple[str, str]:
    return match.group(1), match.group(2) or ""


def _op(nccl_name: str) -> str:
    return _OPS.get(nccl_name, nccl_name.lower().strip("_"))


def _logged_s(line: str) -> float:
    """Seconds of glog's month-day-time stamp, in a year of its own; 0 where the line has none."""
    stamp = _GLOG_TIME.search(line)
    if stamp is None:
        return 0.0
    month, day, hour, minute, second, fraction = stamp.groups()
    when = datetime(2000, int(month), int(day), int(hour), int(minute), int(second))
    return when.timestamp() + float(f"0.{fraction}")
