"""The Report: numbers only, versioned, saved as JSON and re-rendered without the traces.

Documented field by field in docs/report-schema.md. Loading fills defaults for fields that a
newer commprof added, so old reports keep rendering.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_type_hints

from commprof.errors import UsageError

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Stat:
    median: float
    p95: float
    mean: float


@dataclass(frozen=True)
class StepBreakdown:
    rank: int
    step: str
    window_ms: float
    compute_ms: float
    comm_ms: float
    overlap_ms: float
    exposed_comm_ms: float
    idle_ms: float
    memory_ms: float


@dataclass(frozen=True)
class RankSummary:
    """Per rank. Components are means over steps, so compute + exposed + idle = step_time_ms.mean."""

    rank: int
    kind: str
    steps: int
    step_time_ms: Stat
    compute_ms: float
    comm_ms: float
    overlap_ms: float
    exposed_comm_ms: float
    idle_ms: float
    memory_ms: float
    comm_compute_ratio: float | None
    exposed_fraction: float
    host: str | None = None


@dataclass(frozen=True)
class CollectiveStats:
    op: str
    backend: str
    dtype: str | None
    bytes: int | None
    group_size: int | None
    count: int
    calls_per_step: float
    mean_ms: float
    algbw_gbps: float | None
    busbw_gbps: float | None


@dataclass(frozen=True)
class RankSkew:
    """One rank's side of the matched collectives: waiting for others vs moving data."""

    rank: int
    clock_offset_us: float  # added to this rank's times to put them on rank 0's clock
    wait_ms: float  # per step: arrived early and waited for the last rank
    transfer_ms: float  # per step: from the last rank's arrival to the end
    last_arrivals: int  # matched collectives where this rank arrived last
    median_step_ms: float


@dataclass(frozen=True)
class CrossRank:
    ranks: list[RankSkew]
    matched_collectives: int
    alignment: str  # how clocks were aligned, in words
    straggler: int | None  # the rank the others wait for most often
    straggler_late_ms: float  # mean, over matched collectives, of its arrival after the median of the others
    step_spread_ms: float  # slowest minus fastest median step time
    slowest_rank: int


@dataclass(frozen=True)
class SkippedFileInfo:
    path: str
    reason: str


@dataclass(frozen=True)
class Report:
    name: str
    kind: str  # "run" or "analysis"
    created: str
    sources: list[str]
    ranks: list[RankSummary]
    collectives: list[CollectiveStats]
    steps: list[StepBreakdown] = field(default_factory=list)
    run: dict[str, Any] = field(default_factory=dict)  # run.json summary when commprof made the traces
    skipped: list[SkippedFileInfo] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    cross_rank: CrossRank | None = None
    schema_version: int = SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Report:
        return _build(cls, data)


def save_report(report: Report, path: Path) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(report.to_json())
    os.replace(tmp, path)


def load_report(path: Path) -> Report:
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror}") from None
    except ValueError as exc:
        raise UsageError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict) or "schema_version" not in data:
        raise UsageError(f"{path}: not a commprof report (no schema_version)")
    if data["schema_version"] > SCHEMA_VERSION:
        raise UsageError(f"{path}: report schema {data['schema_version']} is newer than this commprof "
                         f"understands ({SCHEMA_VERSION}); upgrade commprof")
    try:
        return Report.from_dict(data)
    except (TypeError, KeyError, ValueError) as exc:
        raise UsageError(f"{path}: malformed report ({exc})") from None


def _build(cls: type, data: Any) -> Any:
    """Rebuild nested dataclasses from plain JSON data, ignoring unknown keys."""
    hints = get_type_hints(cls)
    kwargs = {}
    for f in dataclasses.fields(cls):
        if f.name not in data:
            continue
        kwargs[f.name] = _convert(hints[f.name], data[f.name])
    return cls(**kwargs)


def _convert(hint: Any, value: Any) -> Any:
    origin = getattr(hint, "__origin__", None)
    args = getattr(hint, "__args__", ())
    if origin is not list and args and type(None) in args:  # Optional[X]
        inner = next(a for a in args if a is not type(None))
        return None if value is None else _convert(inner, value)
    if dataclasses.is_dataclass(hint) and isinstance(value, dict):
        return _build(hint, value)
    if origin is list and args and dataclasses.is_dataclass(args[0]):
        return [_build(args[0], v) for v in value]
    return value
