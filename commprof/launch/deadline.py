"""--timeout for every collective, whatever process group the script made.

A script's own process group can wait far longer than --timeout (Lightning, Hugging Face Trainer and DeepSpeed pass
30 minutes or more of their own; worker/torch_settings bounds only the groups made without one). While the ranks
run, the launch reads their accounts of a stall (results/hang.py): once a rank has been inside one collective for
longer than --timeout plus GRACE_S, it stops the job, as the collective's own timeout would have, and says where each
rank was.

It acts only on a wait still going on: a rank withdraws its account when it steps again, and one that has not been
rewritten for FRESH_S (a stalled rank rewrites it every few seconds) is no longer known to be true. And only when
--timeout was given (launch/launcher.py): commprof's default never shortens a patience the script chose for its own
process groups. A collective commprof runs over MPI through mpi4py (instrument/mpi_collectives.py) has no timeout at
all: under mpirun (launch/mpi_job.py) the deadline watches those whether --timeout was given or not
(`every_collective`), as the process group's timeout bounds commprof's other collectives."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from commprof.launch.hang_evidence import describe_hang
from commprof.results.failure_facts import Hang, Overdue
from commprof.results.hang import MPI_GROUP_DESC, read_evidence

GRACE_S = 15.0
POLL_S = 2.0
FRESH_S = 20.0  # an account older than this is stale: its rank stopped rewriting it (hang_watch.REFRESH_S is 2 s)


class CollectiveDeadline:
    """`every_collective`: False to act only on waits in collectives that have no timeout of their own (MPI's)."""

    def __init__(
        self, folder: Path, timeout_s: float, clock: Callable[[], float] = time.time, every_collective: bool = True
    ):
        self.folder, self.timeout_s, self.clock, self.every_collective = folder, timeout_s, clock, every_collective
        self.overdue: Hang | None = None  # once it stopped the job: where the ranks were
        self.over_mpi = False  # the waits it acted on were all in MPI collectives

    def passed(self) -> bool:
        """A rank has waited in one collective longer than --timeout and the grace: `overdue` says where."""
        evidence = read_evidence(self.folder)
        now = self.clock()
        late = [
            e.inside
            for e in evidence.values()
            if e.inside is not None
            and (self.every_collective or e.inside.group_desc == MPI_GROUP_DESC)
            and now - e.taken_s <= FRESH_S
            and now - e.inside.entered_s > self.limit_s
        ]
        if late:
            self.overdue = describe_hang(evidence)
            self.over_mpi = all(c.group_desc == MPI_GROUP_DESC for c in late)
        return bool(late)

    @property
    def limit_s(self) -> float:
        return self.timeout_s + GRACE_S

    def summary(self, host: str) -> Overdue:
        """Where the ranks were when it stopped the job, and the limit it stopped them at."""
        return Overdue(self.overdue, host, self.timeout_s, GRACE_S, self.over_mpi)

    @contextmanager
    def watching(self, stop: Callable[[], None] | None = None) -> Iterator[CollectiveDeadline]:
        """While the block runs, a thread checks every POLL_S; when the deadline passes, it calls `stop`, by default
        SIGTERM to this process, which torch's elastic agent turns into stopping the ranks (each writes what it was
        recording)."""
        done = threading.Event()

        def watch() -> None:
            while not done.wait(POLL_S):
                if self.passed():
                    (stop or _terminate_this_process)()
                    return

        thread = threading.Thread(target=watch, name="commprof-collective-deadline", daemon=True)
        thread.start()
        try:
            yield self
        finally:
            done.set()


def _terminate_this_process() -> None:
    os.kill(os.getpid(), signal.SIGTERM)
