"""The job's process groups in a report: each dimension of a device mesh (or each group's role where there is no
mesh) with the time its collectives took and left exposed (analysis/groups.py computes it; render/ says it)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class DimensionTime:
    """One dimension's collectives per profiled step: the time one of them was in flight, and of that the time no
    computation ran beside it (exposed), the mean over its ranks' steps; each rank's too."""

    dimension: str  # a DeviceMesh dimension's name ("dp", "tp"), else its groups' description ("world")
    groups: list[list[int]]  # its process groups' members, global ranks
    comm_ms: float
    exposed_ms: float
    calls_per_step: float  # each rank's collectives in it per step, the mean over ranks
    rank_comm_ms: dict[str, float] = field(default_factory=dict)
    rank_exposed_ms: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class StageWait:
    """One stage of a pipeline (its ranks: the same place in each stage group), per profiled step: the time its
    sends and receives to its neighbours left exposed, waiting for them (its bubble with the transfers), and its
    step, the means over its ranks."""

    stage: int
    ranks: list[int]
    wait_ms: float
    step_ms: float
