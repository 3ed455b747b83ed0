"""A rank whose script returned, told to the launch (`ended_rank<N>.json` in the launch's hang folder): written by the
rank (worker/script_end.py) when it leaves without commprof's measurements, read by the launch when the job fails
(launch/script_ends.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import msgspec

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
    found = {}
    for path in folder.glob(f"{ENDED_PREFIX}*.json"):
        try:
            ended = msgspec.json.decode(path.read_bytes(), type=ScriptEnded)
        except (OSError, msgspec.DecodeError, msgspec.ValidationError):
            continue
        found[ended.rank] = ended
    return found
