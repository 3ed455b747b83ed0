"""--timeout for every collective, whatever process group the script made.

A script's own process group can wait far longer than --timeout (Lightning, Hugging Face Trainer and DeepSpeed pass
30 minutes or more of their own; worker/torch_settings bounds only the groups made without one). While the ranks
run, the launch reads their accounts of a stall (results/hang.py): once a rank has been inside one collective for
longer than --timeout plus GRACE_S, it stops the job, as the collective's own timeout would have, and says where each
rank was.

It acts only on a wait still going on: a rank withdraws its account when it steps again, and one that has not been
rewritten for FRESH_S (a stalled rank rewrites it every few seconds) is no longer known to be true. And only when
--timeout was given: commprof's default never shortens a patience the script chose for its own process groups."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from commprof.launch.hang_evidence import describe_hang
from commprof.results.hang import read_evidence

GRACE_S = 15.0
POLL_S = 2.0
FRESH_S = 20.0  # an account older than this is stale: its rank stopped rewriting it (hang_watch.REFRESH_S is 2 s)


class CollectiveDeadline:
    def __init__(self, folder: Path, timeout_s: float, clock: Callable[[], float] = time.time):
        self.folder, self.timeout_s, self.clock = folder, timeout_s, clock
        self.overdue: str | None = None  # once it stopped the job: where the ranks were

    def passed(self) -> bool:
        """A rank has waited in one collective longer than --timeout and the grace: `overdue` says where."""
        evidence = read_evidence(self.folder)
        now = self.clock()
        late = [
            e
            for e in evidence.values()
            if e.inside is not None and now - e.taken_s <= FRESH_S and now - e.inside.entered_s > self.limit_s
        ]
        if late:
            self.overdue = describe_hang(evidence)
        return bool(late)

    @property
    def limit_s(self) -> float:
        return self.timeout_s + GRACE_S

    def summary(self, host: str) -> str:
        return (
            f"{self.overdue}; a collective waited over --timeout {self.timeout_s:g} s and {GRACE_S:g} s of grace on "
            f"{host} (the script's process group would have waited longer): commprof stopped the job"
        )

    @contextmanager
    def watching(self) -> Iterator[CollectiveDeadline]:
        """While the block runs, a thread checks every POLL_S; when the deadline passes, it sends this process
        SIGTERM, which torch's elastic agent turns into stopping the ranks (each writes what it was recording)."""
        done = threading.Event()

        def watch() -> None:
            while not done.wait(POLL_S):
                if self.passed():
                    os.kill(os.getpid(), signal.SIGTERM)
                    return

        thread = threading.Thread(target=watch, name="commprof-collective-deadline", daemon=True)
        thread.start()
        try:
            yield self
        finally:
            done.set()
