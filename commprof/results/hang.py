"""What a rank that has stopped stepping was doing: written by the rank while it is alive
(instrument/hang_watch.py), read by the launch when the job fails (launch/hang_evidence.py).

`hang_rank<N>.json` in the launch's log folder: the rank's steps so far, how long it has been without a step, its
main thread's stack (each frame marked `own` when it is the user's code: not Python's library, not an installed
package, not commprof), and per process group the last few collectives it entered, each with the line of the user's
code that called it (torch's Flight Recorder)."""

from __future__ import annotations

import linecache
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

EVIDENCE_PREFIX = "hang_rank"
ENTERING_PREFIX = "entering_rank"  # a rank's latest collective, as it called it (instrument/entering.py)
ENTERING_BYTES = 2048  # its fixed size: rewritten in place
FOLDER_VARIABLE = "COMMPROF_HANG_DIR"  # set by the launch for every rank: where to write
RECENT = 8  # collectives kept per process group: enough to find where two ranks' sequences part
# the group_desc of a collective commprof ran over MPI through mpi4py (instrument/mpi_collectives.py): torch's Flight
# Recorder never sees those, and MPI gives them no timeout of their own
MPI_GROUP_DESC = "mpi4py"


_LIBRARIES = tuple(
    {str(Path(p).resolve()) for key in ("stdlib", "platstdlib", "purelib", "platlib") if (p := sysconfig.get_path(key))}
)
_COMMPROF = str(Path(__file__).resolve().parent.parent)


def own_code(file: str) -> bool:
    """The user's code: not Python's library, not an installed package, not commprof, not generated code."""
    if file.startswith("<"):
        return False
    path = str(Path(file).resolve())
    return not path.startswith((*_LIBRARIES, _COMMPROF)) and "site-packages" not in path


@dataclass(frozen=True)
class StackFrame:
    file: str
    line: int
    function: str
    code: str  # the source line, stripped
    own: bool  # the user's code (the script and its modules), not a library's


@dataclass(frozen=True)
class EnteredCollective:
    """The last collective a rank entered in one process group, as its Flight Recorder holds it."""

    group: str  # the process group's name ("0": the default group)
    group_desc: str  # torch's description of it ("default_pg", "undefined", ...)
    seq: int  # the collective's sequence number in that group, from 1
    op: str  # "all_reduce", "broadcast", ... (the backend's prefix removed)
    sizes: list[list[int]]  # each input tensor's shape
    dtypes: list[str]  # each input tensor's dtype, in torch's words ("Float", "Half")
    completed: bool  # False: the rank is inside it
    entered_s: float  # when it was entered (seconds since the epoch)
    site: StackFrame | None = None  # the innermost frame of the user's own code that called it

    def same_call(self, other: EnteredCollective) -> bool:
        """The same op on tensors of the same shapes and dtypes."""
        return (self.op, self.sizes, self.dtypes) == (other.op, other.sizes, other.dtypes)


@dataclass(frozen=True)
class HangEvidence:
    rank: int
    host: str
    steps_done: int | None  # None: not known (a Flight Recorder dump from a job commprof did not launch)
    taken_s: float  # when this was written (seconds since the epoch)
    stalled_s: float  # how long the rank had been without a step then
    stack: list[StackFrame] = field(default_factory=list)  # the main thread's, outermost first
    collectives: list[EnteredCollective] = field(default_factory=list)  # its latest few, per process group

    @property
    def inside(self) -> EnteredCollective | None:
        """The collective the rank is waiting in, if any: the earliest it has not completed."""
        return min((c for c in self.collectives if not c.completed), key=_seq, default=None)

    def pending(self, group: str) -> EnteredCollective | None:
        """The earliest collective of `group` it entered and has not completed."""
        return min((c for c in self.collectives if c.group == group and not c.completed), key=_seq, default=None)

    def entered(self, group: str, seq: int) -> EnteredCollective | None:
        return next((c for c in self.collectives if c.group == group and c.seq == seq), None)

    @property
    def own_frame(self) -> StackFrame | None:
        """The innermost frame of the user's own code: where the script is."""
        return next((f for f in reversed(self.stack) if f.own), None)


def _seq(entered: EnteredCollective) -> int:
    return entered.seq


def evidence_path(folder: Path, rank: int) -> Path:
    return folder / f"{EVIDENCE_PREFIX}{rank}.json"


def entering_path(folder: Path, rank: int) -> Path:
    return folder / f"{ENTERING_PREFIX}{rank}.json"


def read_entering(folder: Path) -> dict[int, EnteredCollective]:
    """rank -> the collective it last called (instrument/entering.py), for every rank that recorded one."""
    found = {}
    for path in folder.glob(f"{ENTERING_PREFIX}*.json"):
        try:
            found[int(path.stem.removeprefix(ENTERING_PREFIX))] = msgspec.json.decode(
                path.read_bytes().strip(), type=EnteredCollective
            )
        except (OSError, ValueError, msgspec.DecodeError, msgspec.ValidationError):
            continue
    return found


def encode(evidence: HangEvidence) -> bytes:
    return msgspec.json.encode(evidence)


def read_evidence(folder: Path) -> dict[int, HangEvidence]:
    """rank -> what it last wrote, for every file in `folder` that reads as evidence (others are skipped: a rank
    killed while writing leaves no complete file, as it writes a temporary one and renames it)."""
    found = {}
    for path in folder.glob(f"{EVIDENCE_PREFIX}*.json"):
        evidence = read_account(path)
        if evidence is not None:
            found[evidence.rank] = evidence
    return found


def read_account(path: Path) -> HangEvidence | None:
    try:
        return msgspec.json.decode(path.read_bytes(), type=HangEvidence)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return None


def recent_collectives(dump: dict[str, Any], per_group: int = RECENT) -> list[EnteredCollective]:
    """Per process group, the last `per_group` collectives entered, from a Flight Recorder dump (`entries` and
    `pg_status`, torch 2.6 and later; the entries' `frames`, innermost first, give the user's line that called each;
    each entry's `retired` says whether it completed)."""
    status = dump.get("pg_status", {})  # by the process group's name
    by_group: dict[str, list[dict[str, Any]]] = {}
    for entry in dump.get("entries", []):
        if not entry.get("is_p2p"):
            by_group.setdefault(_group_name(entry), []).append(entry)
    found = []
    for group, entries in sorted(by_group.items()):
        completed_up_to = int(status.get(group, {}).get("last_completed_collective", -1))
        for entry in sorted(entries, key=lambda e: e.get("collective_seq_id", -1))[-per_group:]:
            seq = int(entry["collective_seq_id"])
            described = entry.get("process_group") or []
            found.append(
                EnteredCollective(
                    group=group,
                    group_desc=str(described[1]) if len(described) > 1 else "",
                    seq=seq,
                    op=str(entry.get("profiling_name", "")).split(":")[-1],
                    sizes=[list(s) for s in entry.get("input_sizes", [])],
                    dtypes=[str(d) for d in entry.get("input_dtypes", [])],
                    completed=_completed(entry, completed_up_to),
                    entered_s=entry.get("time_created_ns", 0) / 1e9,
                    site=_call_site(entry.get("frames", [])),
                )
            )
    return found


def _completed(entry: dict[str, Any], completed_up_to: int) -> bool:
    """The entry's own word where it has one (`retired`): Gloo runs collectives on several threads, so a later one can
    complete while an earlier one still waits, and the group's last completed number says nothing of the earlier."""
    if "retired" in entry:
        return bool(entry["retired"])
    return completed_up_to >= int(entry["collective_seq_id"])


def _call_site(frames: list[dict[str, Any]]) -> StackFrame | None:
    """The innermost frame of the user's own code among a collective's frames (innermost first, as torch records)."""
    for frame in frames:
        file, line = str(frame.get("filename", "")), int(frame.get("line", 0))
        if own_code(file):
            return StackFrame(file, line, str(frame.get("name", "")), linecache.getline(file, line).strip(), True)
    return None


def _group_name(entry: dict[str, Any]) -> str:
    described = entry.get("process_group") or [entry.get("pg_id", "")]
    return str(described[0])
