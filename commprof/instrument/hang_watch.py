"""Each rank's own account of a hang, taken while it is still alive.

A stuck job ends when a collective times out: the rank that timed out raises, the launcher stops the others, and
whatever they were doing is gone. So every rank runs a daemon thread that, once the rank has completed no step for
`stall_s` (half the collective timeout, from MIN_STALL_S to MAX_STALL_S), writes where its main thread is and the
last RECENT collectives it entered in each process group, each with the user's line that called it (torch's Flight
Recorder, which records Gloo's collectives as well as NCCL's; those commprof runs over MPI through mpi4py, from its own
record, instrument/mpi_collectives.py), and writes it again every REFRESH_S while the stall
lasts (results/hang.py). A stall is a fact with a time: the account says when it was taken, and it is withdrawn (the
file removed) as soon as the rank steps again, so a pause that ends (a checkpoint, an evaluation) leaves nothing for
the launch's deadline (launch/deadline.py) to act on. The launch reads the files when the job fails
(launch/hang_evidence.py), and the progress view while it runs.

When the launcher stops the rank (SIGTERM, SIGINT), or the rank fails (`account_at_exit`), the account is written at
once, stall or not: where the rank was and the collectives it last entered, each with its line, are what tells a
peer's abort apart (launch/faults.py: the same call with other tensors, or a collective this rank never made). The
thread learns of the signal through Python's wakeup file descriptor, which the C-level handler writes even while the
main thread is blocked in C++.

Once the rank has not stepped for IDLE_S, `idle` is called once (the caller writes its progress with the step it
really finished: the progress file is rewritten at most every quarter second while it steps, so it can lag)."""

from __future__ import annotations

import dataclasses
import os
import re
import select
import signal
import socket
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Callable

from commprof.instrument.group_record import flight_recorder_dump
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

MIN_STALL_S, MAX_STALL_S = 5.0, 30.0
REFRESH_S = 2.0
IDLE_S = 1.0
TICK_S = 1.0
# the kinds of account: a stall still going on; where a rank's error was raised (its traceback); where it was when the
# launcher's stop reached the watch (its main thread may already be unwinding). Each may replace only those before it
# here: once a rank is leaving, a stall's account is neither rewritten nor replaced
STALL, EXIT, STOP = 1, 2, 3
_REPLACES = {STALL: {0, STALL}, EXIT: {0, STOP}, STOP: {0}}
MAX_FRAMES = 40


def stack_of(thread_id: int) -> list[StackFrame]:
    frame = sys._current_frames().get(thread_id)
    if frame is None:
        return []
    return [
        StackFrame(f.filename, f.lineno or 0, f.name, (f.line or "").strip(), own_code(f.filename))
        for f in traceback.extract_stack(frame)[-MAX_FRAMES:]
    ]


def flight_recorder_collectives(stacks: bool = True) -> list[EnteredCollective]:
    """This process's collectives, from torch's Flight Recorder (empty where it is off or absent); without `stacks`
    (a tenth of a second, against seconds) no call's line is known."""
    dump = flight_recorder_dump(stacks)
    try:
        return recent_collectives(dump) if dump is not None else []
    except (ValueError, KeyError, TypeError):
        return []


def entered_collectives() -> list[EnteredCollective]:
    """This process's collectives: torch.distributed's, from its Flight Recorder, and those it ran over MPI through
    mpi4py, which the Flight Recorder never sees (instrument/mpi_collectives.py)."""
    from commprof.instrument import mpi_collectives

    return flight_recorder_collectives() + mpi_collectives.recent()


def run_sequences() -> list[GroupSequence]:
    """This process's collectives over the run, per process group, from torch's Flight Recorder dumped without
    stack traces (a tenth of a second; with them, seconds); empty where it is off or absent."""
    dump = flight_recorder_dump()
    try:
        return sequences_of(dump) if dump is not None else []
    except (ValueError, KeyError, TypeError):
        return []


_started: list[HangWatch] = []  # this process's watch, once started


_TIMED_OUT = re.compile(r"timed out|timeout", re.IGNORECASE)


def account_at_exit(error: BaseException) -> None:
    """The rank is leaving on `error`: its account, where the error was raised and its last collectives. A timeout
    fired in the collective it entered last: the account says it waits there (the backend retired it as it failed)."""
    timed_out = bool(_TIMED_OUT.search(str(error)))
    for watch in _started:
        watch.write(time.monotonic() - watch.last_step, kind=EXIT, stack=frames_of(error), timed_out=timed_out)


def frames_of(error: BaseException) -> list[StackFrame]:
    return [
        StackFrame(f.filename, f.lineno or 0, f.name, (f.line or "").strip(), own_code(f.filename))
        for f in traceback.extract_tb(error.__traceback__)[-MAX_FRAMES:]
    ]


class HangWatch:
    """Call `stepped()` at every step; `start()` once; the thread stops with the process."""

    def __init__(
        self,
        folder: Path,
        rank: int,
        timeout_s: float,
        collectives: Callable[[], list[EnteredCollective]] = entered_collectives,
        idle: Callable[[], None] | None = None,
    ):
        self.folder, self.rank = folder, rank
        self.tick: Callable[[float, int], None] | None = None  # called every loop (at least every TICK_S)
        self.stall_s = min(MAX_STALL_S, max(MIN_STALL_S, timeout_s / 2))
        self.collectives, self.idle = collectives, idle
        self.host = socket.gethostname()
        self.main = threading.get_ident()
        self.steps_done = 0
        self.last_step = time.monotonic()
        self.lock = threading.Lock()  # a write and its withdrawal never cross
        self.written = 0  # the kind of account on disk (STALL, EXIT, STOP), 0 for none
        self.leaving = False  # stopped, or failing: no stall is written any more
        self.returned = False  # the script returned: nothing more is written
        self.wakeup: tuple[socket.socket, socket.socket] | None = None  # (read, write): the signals received

    @classmethod
    def from_environment(cls, rank: int, timeout_s: float, idle: Callable[[], None] | None = None) -> HangWatch | None:
        folder = os.environ.get(FOLDER_VARIABLE)
        return cls(Path(folder), rank, timeout_s, idle=idle) if folder else None

    def stepped(self) -> None:
        self.steps_done += 1
        self.last_step = time.monotonic()
        if self.written:
            self.withdraw()

    def script_returned(self) -> None:
        """The rank's script returned: its waits from now on are commprof's, not a stall of the script's."""
        self.returned = True
        self.withdraw()

    def start(self) -> None:
        """From the main thread: the watch begins, and learns of the signals that stop the rank."""
        read, write = socket.socketpair()
        write.setblocking(False)
        try:
            signal.set_wakeup_fd(write.fileno(), warn_on_full_buffer=False)
            self.wakeup = (read, write)
        except ValueError:  # not the main thread: no account at a stop
            read.close()
            write.close()
        threading.Thread(target=self._watch, name="commprof-hang-watch", daemon=True).start()
        _started[:] = [self]

    def _sleep(self, seconds: float) -> None:
        """Wait `seconds`; a stop received meanwhile is written down at once (the rank is about to end)."""
        if self.wakeup is None:
            time.sleep(seconds)
            return
        if select.select([self.wakeup[0]], [], [], seconds)[0]:
            received = self.wakeup[0].recv(64)
            if {signal.SIGTERM, signal.SIGINT} & set(received):
                self.write(time.monotonic() - self.last_step, kind=STOP)

    def _watch(self) -> None:
        idle, idle_told = self.idle, -1  # the step count when `idle` was last called
        while True:
            steps, stalled = self.steps_done, time.monotonic() - self.last_step
            if self.tick is not None:
                self.tick(stalled, steps)
            unsaid = idle is not None and steps > 0 and idle_told != steps  # before a first step: nothing to say
            if idle is not None and unsaid and stalled >= IDLE_S:
                idle_told = steps
                try:
                    idle()
                except OSError:  # the launch's folder is gone: the job is over
                    pass
            if stalled >= self.stall_s:
                self.write(stalled, steps)
                self._sleep(REFRESH_S)
                continue
            due = [self.stall_s - stalled, REFRESH_S, TICK_S if self.tick is not None else REFRESH_S]
            if unsaid:
                due.append(IDLE_S - stalled)
            self._sleep(max(0.01, min(due)))

    def evidence(
        self, stalled_s: float, stack: list[StackFrame] | None = None, timed_out: bool = False
    ) -> HangEvidence:
        stack = stack_of(self.main) if stack is None else stack
        collectives = self.collectives()
        last = max(collectives, key=lambda c: c.entered_s, default=None)
        if timed_out and last is not None:
            collectives = [dataclasses.replace(c, completed=False) if c is last else c for c in collectives]
        return HangEvidence(self.rank, self.host, self.steps_done, time.time(), stalled_s, stack, collectives)

    def write(
        self,
        stalled_s: float,
        steps: int | None = None,
        kind: int = STALL,
        stack: list[StackFrame] | None = None,
        timed_out: bool = False,
    ) -> None:
        """The account of a stall that began after `steps` steps (this many now, if None); not written when the rank
        has stepped since (the account, taken over seconds, would describe a stall that is over). A rank stopped
        (STOP) or failing (EXIT) writes where it was, unless an account that tells better is there."""
        steps = self.steps_done if steps is None else steps
        if self.returned:
            return
        self.leaving = self.leaving or kind != STALL
        if self.written not in _REPLACES[kind] or (kind == STALL and self.leaving):
            return
        evidence = self.evidence(stalled_s, stack, timed_out)
        path = evidence_path(self.folder, self.rank)
        partial = path.with_name(f"{path.name}.{threading.get_ident()}.partial")
        with self.lock:
            if self.written not in _REPLACES[kind] or (kind == STALL and (self.leaving or self.steps_done != steps)):
                return
            try:
                partial.write_bytes(encode(evidence))
                partial.replace(path)
                self.written = kind
            except OSError:  # the launch's folder is gone: the job is over
                pass

    def withdraw(self) -> None:
        """The stall is over: its account is removed."""
        with self.lock:
            self.written = 0
            try:
                evidence_path(self.folder, self.rank).unlink(missing_ok=True)
            except OSError:  # the launch's folder is gone: the job is over
                pass
