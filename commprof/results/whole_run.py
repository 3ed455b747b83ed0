"""The report's whole-run section: every step of the run on every rank, from the ranks' whole-run records
(results/step_ledger.py), computed by analysis/whole_run.py. Documented in docs/report-schema.md."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class WholeRunPoint:
    """A block of consecutive steps (one step in runs of up to 512 steps)."""

    first_step: int
    steps: int
    step_ms: float  # mean step time over the block, of the slowest rank
    step_ms_max: float  # the block's slowest step on any rank
    comm_ms: float  # mean time per step with a collective in flight, the mean over ranks


@dataclass(frozen=True)
class StandOut:
    """A step slower than STANDOUT times the run's median, and who made it slow."""

    step: int
    step_ms: float  # the slowest rank's time for the step
    times_median: float
    rank: int | None  # the rank with the most time outside collectives in this step (None: one rank only)
    busy_ms: float  # that rank's time outside collectives
    collective: str | None  # what the other ranks waited in, e.g. "all_reduce"
    waited_ms: float  # how long it took on the other ranks (their median)
    lost_ms: float = 0.0  # the step's time beyond the usual step (the run's median; the window's for its steps)
    collective_bytes: int | None = None  # the size of what they waited in


@dataclass(frozen=True)
class WindowCheck:
    """Whether the profiled steps looked like the run."""

    first_step: int
    last_step: int
    median_ms: float  # the window's median step (slowest rank per step)
    standouts: int  # stand-out steps inside the window
    expected_standouts: float  # the run's share of stand-out steps times the window's length
    typical: bool
    why: str  # one sentence


@dataclass(frozen=True)
class ChangePoint:
    """Where the run's step changed for good (analysis/change_point.py)."""

    step: int  # the first step after the change (the first of its block)
    step_ms_before: float  # the median step (slowest rank) before it
    step_ms_after: float
    comm_ms_before: float  # the median time per step with a collective in flight
    comm_ms_after: float
    grew: str  # what changed with the step: "communication", "computation" or "both"
    # the rank the others came to wait for after it (analysis/lateness.py), where its lateness grew by most of the
    # step's change: one rank or host slowed, not the link; None where every rank stayed as late as before
    late_rank: int | None = None
    late_host: str = ""
    late_ms: float = 0.0  # how much longer the others waited for it per step, after against before (medians)


@dataclass(frozen=True)
class WholeRun:
    timed_by: str  # what timed the collectives; "" when only the steps were timed (no DDP, FSDP)
    ranks: list[int]
    steps: int  # steps recorded (the fewest of any rank)
    block_steps: int  # steps per point of `series`
    median_step_ms: float  # over every step of every rank (to 5%)
    median_comm_ms: float  # per step, the median over the steps kept in full
    threshold_ms: float  # a step slower than this stands out
    standout_count: int  # in the whole run
    standouts: list[StandOut] = field(default_factory=list)  # the slowest, in step order (at most MAX_LISTED)
    lost_ms: float = 0.0  # every stand-out step's time beyond the usual step, summed
    slow_rank: int | None = None  # the rank that made the stand-out steps slow for the longest in all
    slow_rank_steps: int = 0  # how many stand-out steps it made slow
    slow_rank_lost_ms: float = 0.0  # their time beyond the usual step, summed
    slow_rank_every: int | None = None  # its largest stand-outs come every this many steps
    window: WindowCheck | None = None
    series: list[WholeRunPoint] = field(default_factory=list)
    change: ChangePoint | None = None  # where the step changed for good, if it did
    compiled_steps: list[int] = field(default_factory=list)  # torch.compile compiled in them: left out of the above
    compiled_ms: float = 0.0  # their time (the slowest rank's), those kept in full
