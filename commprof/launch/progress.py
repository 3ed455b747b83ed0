"""A tiny progress channel: each node's local rank 0 rewrites a JSON file as it steps, the CLI polls it."""

from __future__ import annotations

import json
import os
import threading
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Iterator


@dataclass(frozen=True)
class Progress:
    step: int  # steps done
    steps: int | None  # steps the job will run; None while not known (a script without --max-steps)
    step_ms: float  # rank 0's latest step
    phase: str = "training"
    rank: int = 0  # the global rank that writes it: this node's local rank 0
    host: str = ""


class Every:
    """True at most once per `seconds` (and the first time): a rank's per-step files are rewritten at this pace,
    not at every step, so that commprof's own bookkeeping stays out of the steps it measures."""

    MAX_SHARE = 0.01  # of the run's time spent on what is done when due, however large it grows

    def __init__(self, seconds: float = 0.25):
        self.base = self.seconds = seconds
        self.last = float("-inf")

    def __call__(self) -> bool:
        now = time.monotonic()
        if now - self.last < self.seconds:
            return False
        self.last = now
        return True

    def took(self, seconds: float) -> None:
        """What was done when due took `seconds`: the pace slows so that it stays under MAX_SHARE of the time (a
        step log of 10,017 steps, the most it holds, took 10 ms to write: every second, not every quarter second)."""
        self.seconds = max(self.base, seconds / self.MAX_SHARE)


def write_progress(path: Path, progress: Progress) -> None:
    tmp = path.with_name(f"{path.name}.{threading.get_ident()}.tmp")  # the rank's hang watch writes it too
    tmp.write_text(json.dumps(asdict(progress)))
    os.replace(tmp, path)


def read_progress(path: Path) -> Progress | None:
    try:
        return Progress(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return None


def yield_to_the_job() -> None:
    """Run this thread at the lowest priority (Linux's nice 19, for this thread alone): commprof's own bookkeeping
    beside a job (reading its records, drawing them) took a core from its ranks for 0.1 s at a time, a burst in the
    steps of a run on two cores. Not SCHED_IDLE: a thread that holds the GIL when preempted would then keep the
    launcher's other threads (its agent, its deadline) waiting for seconds on busy cores."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
    except (AttributeError, OSError):
        pass


@contextmanager
def ticking(tick: Callable[[], None], interval_s: float) -> Iterator[None]:
    """`tick()` every `interval_s` seconds on a thread of its own, while the block runs, at the lowest priority."""
    stop = threading.Event()

    def loop() -> None:
        yield_to_the_job()
        while not stop.wait(interval_s):
            tick()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
