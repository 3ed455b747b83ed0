"""What a launch gives back: the run folder, and which of its ranks ran on this node."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class LaunchResult:
    run_id: str
    run_dir: Path
    ranks_here: tuple[int, ...]

    @property
    def has_rank_zero(self) -> bool:
        return 0 in self.ranks_here
