"""`commprof backends`: which op works on which backend and device of this installation."""

from __future__ import annotations

from dataclasses import dataclass, field

from commprof.results.common import SCHEMA_VERSION, Result

DEVICES = ("cpu", "cuda")


@dataclass(frozen=True)
class BackendsResult(Result):
    # backend -> device -> op -> [works, why it failed ("" when it works)]
    matrix: dict[str, dict[str, dict[str, list]]]
    not_available: dict[str, str] = field(default_factory=dict)  # "backend/device" -> why it was not tried
    ops: list[str] = field(default_factory=list)  # the ops tried, in order
    kind: str = "backends"
    schema_version: int = SCHEMA_VERSION

    def cell(self, backend: str, device: str, op: str) -> list | None:
        return self.matrix.get(backend, {}).get(device, {}).get(op)
