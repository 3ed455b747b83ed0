"""`commprof compare`: the same workload on each backend, side by side."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from commprof.results.common import SCHEMA_VERSION, Estimate, Result
from commprof.results.job import CollectiveBusbw


@dataclass(frozen=True)
class BackendRun:
    """One backend's (or strategy's) run: means over ranks of the per-step figures, or why it could not run."""

    backend: str
    available: bool
    reason: str | None = None  # why it did not run
    step_ms: float | None = None  # median over ranks of each rank's median step
    comm_ms: float | None = None
    exposed_comm_ms: float | None = None
    overlap_ms: float | None = None
    busbw_by_size: dict[str, float | None] = field(default_factory=dict)  # the job's all-reduce bytes -> busbw GB/s
    # the kind of job it ran (kinds.KINDS): ddp, fsdp, deepspeed, horovod; None: a script that built none commprof saw
    strategy: str | None = "ddp"
    peak_memory_mb: float | None = None  # the largest over ranks: GPU memory allocated, or on CPU process RSS
    label: str = ""  # what tells this run from the others: its backend, or its strategy (compare --strategies)
    job_steps_ms: list[float] = field(default_factory=list)  # the job's unprofiled steps (slowest rank), in order
    # each interleaved launch's median unprofiled job step, by round (the first launch's report is the row's)
    launch_ms: list[float] = field(default_factory=list)
    # every collective the job ran, by what it ran it as (DDP's all-reduces, FSDP's all-gathers and reduce-scatters),
    # at each size: its busbw
    busbw: list[CollectiveBusbw] = field(default_factory=list)
    model: str | None = None  # the module as the run built it (a built-in model's name); None: not recorded
    parameters: int | None = None  # None: not known
    # the kind's own options as the job ran with them, by their own names; None: not recorded (a script's own)
    settings: dict[str, Any] | None = None

    @property
    def name(self) -> str:
        return self.label or self.backend


PLURAL = {"backend": "backends", "strategy": "strategies"}  # what a comparison compares, and its option


@dataclass(frozen=True)
class CompareVerdict:
    """Which run wins (commands/compare.verdict; render/compare.verdict_text says it): `outcome` is "none" (nothing
    ran), "only" (one ran), "too_few" (too few unprofiled steps to tell two apart), "no_difference" or "wins";
    `speedup`: the best's over the runner-up's, over `rounds` interleaved launches each (0: one launch each, its
    steps' interval widened for a rerun)."""

    outcome: str
    best: str = ""
    runner_up: str = ""
    speedup: Estimate | None = None
    rounds: int = 0


@dataclass(frozen=True)
class CompareResult(Result):
    run_id: str
    rows: list[BackendRun]
    summary: str = ""  # the verdict in words, written into report.json for its readers (render/)
    compared: str = "backend"  # or "strategy"
    verdict: CompareVerdict | None = None  # None: a result written before the verdict was facts (its words only)
    kind: str = "compare"
    schema_version: int = SCHEMA_VERSION

    def ran(self) -> list[BackendRun]:
        return [r for r in self.rows if r.available]
