"""Each rank's own account of a hang, taken while it is still alive.

A stuck job ends when a collective times out: the rank that timed out raises, the launcher stops the others, and
whatever they were doing is gone. So every rank runs a daemon thread that, once the rank has completed no step for
`stall_s` (half the collective timeout, from MIN_STALL_S to MAX_STALL_S), writes where its main thread is and the
last RECENT collectives it entered in each process group, each with the user's line that called it (torch's Flight
Recorder, which records Gloo's collectives as well as NCCL's), and writes it again every REFRESH_S while the stall
lasts (results/hang.py). A healthy job never stalls that long, so it writes nothing. The launch reads the files when
the job fails (launch/hang_evidence.py), and the progress view while it runs."""

from __future__ import annotations

import os
import pickle
import socket
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Callable

from commprof.results.hang import (
    FOLDER_VARIABLE,
    EnteredCollective,
    HangEvidence,
    StackFrame,
    encode,
    evidence_path,
    own_code,
    recent_collectives,
)
from commprof.results.sequences import GroupSequence, sequences_of
from commprof.trace.plain_pickle import plain_loads

MIN_STALL_S, MAX_STALL_S = 5.0, 30.0
REFRESH_S = 2.0
MAX_FRAMES = 40


def stack_of(thread_id: int) -> list[StackFrame]:
    frame = sys._current_frames().get(thread_id)
    if frame is None:
        return []
    return [
        StackFrame(f.filename, f.lineno or 0, f.name, (f.line or "").strip(), own_code(f.filename))
        for f in traceback.extract_stack(frame)[-MAX_FRAMES:]
    ]


def flight_recorder_collectives() -> list[EnteredCollective]:
    """This process's collectives, from torch's Flight Recorder (empty where it is off or absent)."""
    try:
        from torch._C._distributed_c10d import _dump_fr_trace  # type: ignore[attr-defined]

        return recent_collectives(plain_loads(_dump_fr_trace(True, True, False)))
    except (ImportError, RuntimeError, ValueError, KeyError, TypeError, pickle.UnpicklingError):
        return []


def run_sequences() -> list[GroupSequence]:
    """This process's collectives over the run, per process group, from torch's Flight Recorder dumped without
    stack traces (a tenth of a second; with them, seconds); empty where it is off or absent."""
    try:
        from torch._C._distributed_c10d import _dump_fr_trace  # type: ignore[attr-defined]

        return sequences_of(plain_loads(_dump_fr_trace(True, False, False)))
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
