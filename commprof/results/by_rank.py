"""Per-rank records read from their files: each decoded as `kind`, keyed by its `rank`; a file that cannot be read
(a rank killed while writing, an older layout) is skipped."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, TypeVar

import msgspec

Record = TypeVar("Record")


def read_by_rank(paths: Iterable[Path], kind: type[Record]) -> dict[int, Record]:
    found: dict[int, Any] = {}
    for path in paths:
        try:
            record = msgspec.json.decode(path.read_bytes(), type=kind)
        except (OSError, msgspec.DecodeError, msgspec.ValidationError):
            continue
        found[record.rank] = record  # type: ignore[attr-defined]
    return found
