"""A rank whose script returned, told to the launch (`ended_rank<N>.json` in the launch's hang folder): written by the
rank (worker/script_end.py) when it leaves without commprof's measurements, read by the launch when the job fails
(launch/script_ends.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from commprof.results.by_rank import read_by_rank

ENDED_PREFIX = "ended_rank"


@dataclass(frozen=True)
class ScriptEnded:
    """A rank whose script returned, told to the launch: how many steps it made, and why it did not stay."""

    rank: int
    host: str
    steps: int
    left_because: str | None = None  # None: it stayed for commprof's measurements


def ended_path(folder: Path, rank: int) -> Path:
    return folder / f"{ENDED_PREFIX}{rank}.json"


def read_ended(folder: Path) -> dict[int, ScriptEnded]:
    return read_by_rank(folder.glob(f"{ENDED_PREFIX}*.json"), ScriptEnded)
