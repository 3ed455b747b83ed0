"""A tiny progress channel: local rank 0 rewrites a JSON file each step, the CLI polls it."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass(frozen=True)
class Progress:
    step: int
    steps: int
    step_ms: float
    phase: str = "training"


def write_progress(path: Path, progress: Progress) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(asdict(progress)))
    os.replace(tmp, path)


def read_progress(path: Path) -> Progress | None:
    try:
        return Progress(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return None
