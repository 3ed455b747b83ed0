"""`commprof diff A B`: each metric's medians, the difference and its 95% CI, and whether it is real (tested only
when each side has two or more launches)."""

from __future__ import annotations

from dataclasses import dataclass, field

from commprof.results.common import SCHEMA_VERSION, Result


@dataclass(frozen=True)
class DiffRow:
    metric: str
    a: float
    b: float
    delta: float
    delta_pct: float | None
    low: float
    high: float
    significant: bool


@dataclass(frozen=True)
class SettingChange:
    """A setting that shaped the two sides' communication differently (results/run_record.RunSummary.settings)."""

    name: str
    a: str | None  # None: the side has no such setting (FSDP against DDP, a script against a built-in model)
    b: str | None


@dataclass(frozen=True)
class DiffResult(Result):
    a: str
    b: str
    rows: list[DiffRow]
    settings: list[SettingChange] = field(default_factory=list)
    tested: bool = True  # each side several launches: `significant` says whether a change is real
    # what the profiler slowed each side's recorded steps by (analysis/diff.profiler_slowdown): a change counts only
    # beyond the gap between them where it is PRACTICAL_SHARE or more
    slowed: list[float] = field(default_factory=lambda: [0.0, 0.0])
    best: list[str | None] = field(default_factory=lambda: [None, None])  # each side's sweep's best setting
    world_sizes: list[int | None] = field(default_factory=lambda: [None, None])
    kind: str = "diff"
    schema_version: int = SCHEMA_VERSION
