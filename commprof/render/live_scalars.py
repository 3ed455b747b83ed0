"""While a launch runs: each rank's whole-run record (results/step_ledger.py), as its rank rewrites it, as
TensorBoard scalars under `<run>/tensorboard/live/rank<r>/`, so that `commprof view` on a running job draws its steps
as they come; and the run's lasting change, once it shows one, as text beside them."""

from __future__ import annotations

from pathlib import Path

from commprof.render.event_files import EventWriter
from commprof.results.step_ledger import RankLedger

LIVE = "live"  # the folder under the run's tensorboard/ folder


class LiveScalars:
    """Per rank, at each step: `live/step_ms` (its step), and where its all-reduces are timed
    `live/comm_in_flight_ms` (the time with one in flight) and `live/allreduce_GBps` (the bytes reduced over that
    time: what the rank's link carries); each step written once, in order."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.writers: dict[int, EventWriter] = {}
        self.written: dict[int, int] = {}  # rank -> the last step written
        self.said = ""

    def add(self, ledgers: dict[int, RankLedger]) -> int:
        """The steps of `ledgers` not written yet (those a record still holds in full: its last 1024); how many."""
        added = 0
        for rank, ledger in sorted(ledgers.items()):
            last = self.written.get(rank, 0)
            new = [entry for entry in ledger.recent if entry.step > last]
            if not new:
                continue
            writer = self._writer(rank)
            for entry in new:
                writer.add_scalar("live/step_ms", entry.step_ms, entry.step)
                if ledger.timed_by:
                    writer.add_scalar("live/comm_in_flight_ms", entry.comm_ms, entry.step)
                if entry.bytes and entry.comm_ms > 0:
                    writer.add_scalar("live/allreduce_GBps", entry.bytes / entry.comm_ms / 1e6, entry.step)
            writer.flush()
            self.written[rank] = new[-1].step
            added += len(new)
        return added

    def say(self, text: str, step: int) -> None:
        """`text` (the run's change) beside the first rank's scalars, at `step`; said once while it stays the same."""
        if text == self.said or not self.writers:
            return
        writer = self.writers[min(self.writers)]
        writer.add_text("live/change", text, step)
        writer.flush()
        self.said = text

    def close(self) -> None:
        for writer in self.writers.values():
            writer.__exit__()
        self.writers.clear()

    def _writer(self, rank: int) -> EventWriter:
        if rank not in self.writers:
            self.writers[rank] = EventWriter(self.folder / f"rank{rank}")
        return self.writers[rank]
