"""The findings' facts about ranks and the run's window, as the report holds them: analysis/rank_findings.py and
analysis/short_window.py make them, render/ says them (docs/report-schema.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar


@dataclass(frozen=True)
class InputStall:
    """The steps start idle on some ranks (analysis/rank_findings.input_stalls)."""

    KIND: ClassVar[str] = "input_stall"
    rank: int  # the rank idle the longest
    idle_ms: float  # its median time before the step's first operator
    stalled: list[int]  # the ranks idle STALL_SHARE of the step or more, in order
    ranks: int  # the ranks weighed


@dataclass(frozen=True)
class ShortWindow:
    """A script that ended inside the profiled window: the report covers steps first_step-last_step of the `asked`
    profiled steps; `fits`: a --schedule (wait,warmup,active) whose window lies inside the steps it ran."""

    first_step: int
    last_step: int
    asked: int
    fits: tuple[int, int, int]


@dataclass(frozen=True)
class Straggler:
    """The rank whose lateness costs the others the most (analysis/rank_findings.straggler)."""

    KIND: ClassVar[str] = "straggler"
    rank: int
    cost_ms: float  # what it makes the others wait per step in all, in the profiled steps
    cost_by_op: dict[str, float]  # of which, at each kind of collective (the costliest)
    late_steps: int  # the steps weighed in which it cost the others anything worth counting
    profiled_steps: int
    unprofiled_steps: int
    bounded_ms: float | None  # its own extra time outside communication, where that caps the profiled steps' cost
    excess: dict[str, float]  # part of the step (rank_findings.PARTS) -> how much more it spends there than the others
    core_ms: float  # how much longer than the others it waited for a core (the launch's, not counted)
    look_at: str  # the part of the step most in excess ("" where none is)
    look_at_ms: float  # how much more of it
    phase: str | None  # where look_at is its compute: the phase whose compute grew the most
    gpu: bool
    # on a job over several process groups: the dimension (or group) whose other members waited for it the most,
    # and that group's members; "" and [] where the job's collectives ran over one group
    group: str = ""
    group_ranks: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class Stalls:
    """A rank that makes the others wait at a few steps only (analysis/rank_findings.stalls_in)."""

    KIND: ClassVar[str] = "stalls_now_and_then"
    rank: int
    steps: list[int]  # the stalls (its stand-out steps that lost at least half its largest's time), in order
    run_steps: int
    lost_ms: float  # their mean time beyond the usual step
    every: int | None  # they come every this many steps
    waited_in: str | None  # the collective the others waited in, e.g. "all_reduce"
    waited_bytes: int | None
    window: tuple[int, int] | None  # the profiled window, where none of the run's stand-outs fell in it
    cost_ms: float  # its mean cost per step over the whole run


@dataclass(frozen=True)
class Unfinished:
    """A failed or interrupted run: its report covers the steps that completed on every rank
    (analysis/incomplete.completed_steps_only)."""

    status: str  # run.json's: "failed", "running" (it never said how it ended) or "interrupted"
    error: str | None  # why it failed, or how it was interrupted
    completed: int  # steps completed on every rank
    covered: tuple[int, int] | None  # the first and last of them the report covers (the traced ones); None: none
    missing: list[int] = field(default_factory=list)  # ranks with no trace here
    emptied: list[int] = field(default_factory=list)  # ranks with no completed traced step
