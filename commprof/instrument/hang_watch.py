"""Each rank's own account of a hang, taken while it is still alive.

A stuck job ends when a collective times out: the rank that timed out raises, the launcher stops the others, and
whatever they were doing is gone. So every rank runs a daemon thread that, once the rank has completed no step for
`stall_s` (half the collective timeout, from MIN_STALL_S to MAX_STALL_S), writes where its main thread is and the
last RECENT collectives it entered in each process group, each with the user's line that called it (torch's Flight
Recorder, which records Gloo's collectives as well as NCCL's), and writes it again every REFRESH_S while the stall
lasts (results/hang.py). A healthy job never stalls that long, so it writes nothing. The launch reads the files when
the job fails (launch/hang_evidence.py), and the progress view while it runs."""

from __future__ import annotations

import linecache
import os
import pickle
import socket
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any, Callable

from commprof.results.hang import (
    FOLDER_VARIABLE,
    EnteredCollective,
    HangEvidence,
    StackFrame,
    encode,
    evidence_path,
    own_code,
)
from commprof.trace.plain_pickle import plain_loads

MIN_STALL_S, MAX_STALL_S = 5.0, 30.0
REFRESH_S = 2.0
MAX_FRAMES = 40
RECENT = 8  # collectives kept per process group: enough to find where two ranks' sequences part


def stack_of(thread_id: int) -> list[StackFrame]:
    frame = sys._current_frames().get(thread_id)
    if frame is None:
        return []
    return [
        StackFrame(f.filename, f.lineno or 0, f.name, (f.line or "").strip(), own_code(f.filename))
        for f in traceback.extract_stack(frame)[-MAX_FRAMES:]
    ]


def recent_collectives(dump: dict[str, Any], per_group: int = RECENT) -> list[EnteredCollective]:
    """Per process group, the last `per_group` collectives entered, from a Flight Recorder dump (`entries` and
    `pg_status`, torch 2.6 and later; the entries' `frames`, innermost first, give the user's line that called each)."""
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
                    completed=completed_up_to >= seq,
                    entered_s=entry.get("time_created_ns", 0) / 1e9,
                    site=_call_site(entry.get("frames", [])),
                )
            )
    return found


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


def flight_recorder_collectives() -> list[EnteredCollective]:
    """This process's collectives, from torch's Flight Recorder (empty where it is off or absent)."""
    try:
        from torch._C._distributed_c10d import _dump_fr_trace  # type: ignore[attr-defined]

        return recent_collectives(plain_loads(_dump_fr_trace(True, True, False)))
    except (ImportError, RuntimeError, ValueError, KeyError, TypeError, pickle.UnpicklingError):
        return []


class HangWatch:
    """Call `stepped()` at every step; `start()` once; the thread stops with the process."""

    def __init__(
        self,
        folder: Path,
        rank: int,
        timeout_s: float,
        collectives: Callable[[], list[EnteredCollective]] = flight_recorder_collectives,
    ):
        self.folder, self.rank = folder, rank
        self.stall_s = min(MAX_STALL_S, max(MIN_STALL_S, timeout_s / 2))
        self.collectives = collectives
        self.host = socket.gethostname()
        self.main = threading.get_ident()
        self.steps_done = 0
        self.last_step = time.monotonic()

    @classmethod
    def from_environment(cls, rank: int, timeout_s: float) -> HangWatch | None:
        folder = os.environ.get(FOLDER_VARIABLE)
        return cls(Path(folder), rank, timeout_s) if folder else None

    def stepped(self) -> None:
        self.steps_done += 1
        self.last_step = time.monotonic()

    def start(self) -> None:
        threading.Thread(target=self._watch, name="commprof-hang-watch", daemon=True).start()

    def _watch(self) -> None:
        while True:
            stalled = time.monotonic() - self.last_step
            if stalled >= self.stall_s:
                self.write(stalled)
                time.sleep(REFRESH_S)
            else:
                time.sleep(min(REFRESH_S, self.stall_s - stalled))

    def evidence(self, stalled_s: float) -> HangEvidence:
        return HangEvidence(
            self.rank, self.host, self.steps_done, time.time(), stalled_s, stack_of(self.main), self.collectives()
        )

    def write(self, stalled_s: float) -> None:
        path = evidence_path(self.folder, self.rank)
        partial = path.with_suffix(".partial")
        try:
            partial.write_bytes(encode(self.evidence(stalled_s)))
            partial.replace(path)
        except OSError:  # the launch's folder is gone: the job is over
            pass
