"""The findings' facts about ranks and the run's window, as the report holds them: analysis/rank_findings.py and
analysis/short_window.py make them, render/ says them (docs/report-schema.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Literal

from commprof.results.failure_facts import Failure


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
    error: str | None  # how it was interrupted, or a setup problem's line
    completed: int  # steps completed on every rank
    covered: tuple[int, int] | None  # the first and last of them the report covers (the traced ones); None: none
    missing: list[int] = field(default_factory=list)  # ranks with no trace here
    emptied: list[int] = field(default_factory=list)  # ranks with no completed traced step
    failure: Failure | None = None  # why it failed (results/failure_facts.py)


@dataclass(frozen=True)
class PartialReport:
    """The report of a run that did not complete: its page, or why none was written (`why_not`: the run folder was
    not created, no trace was written, no step its traces hold completed on every rank, or `error` stopped it)."""

    page: Path | None
    why_not: Literal["", "no_folder", "no_trace", "nothing_completed", "error"] = ""
    error: str = ""


@dataclass(frozen=True)
class StepsDone:
    """How far a run that did not complete got: steps every rank completed, of `total` (None: a script's own loop
    decides)."""

    done: int
    total: int | None


@dataclass(frozen=True)
class Refused:
    """What commprof gave the script that torch or a framework refused: a bucket cap below torch.compile's 1 MiB first
    bucket (`value`: the cap), or a world size a Lightning Trainer's fixed devices and nodes do not make (`value`: the
    world size launched)."""

    what: Literal["compiled_cap", "lightning_world"]
    value: float
