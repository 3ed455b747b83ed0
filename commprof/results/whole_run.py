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
    transfer_ms: float = 0.0  # the least of the ranks' means of it: the collectives' own time, no one's lateness in it


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
    """Whether the profiled steps looked like the run: its stretch where the run went through several."""

    first_step: int
    last_step: int
    median_ms: float  # the window's median step (slowest rank per step)
    standouts: int  # stand-out steps inside the window
    expected_standouts: float  # the run's share of stand-out steps times the window's length
    typical: bool
    against_ms: float = 0.0  # the median step it is set against: the run's, or its stretch's
    run_standouts: int = 0  # stand-out steps in the whole run
    run_steps: int = 0
    missed_standouts: bool = False  # none of its steps stood out while enough of the run's did that some should have
    more_standouts: bool = False  # more of its steps stood out than the run's share
    # the stretch it lies in (first and last step) where the run went through several; None where it had one, or
    # where the window holds a change (`holds_change`)
    stretch: tuple[int, int] | None = None
    holds_change: int | None = None  # the step of a change inside the window
    slowed_by_profiler: bool = False  # its median this much above the run's is the profiler's own cost
    length: int = 0  # its steps kept in full (the compile steps and those past the record's bound left out)
    why: str = ""  # a report from before issue 62: the check said in words (its fields above then 0)


@dataclass(frozen=True)
class Stretch:
    """Consecutive steps of the run alike in their step time (analysis/stretches.py): the run cut at its changes."""

    first_step: int
    last_step: int
    step_ms: float  # the median step (slowest rank)
    comm_ms: float  # the median time per step with a collective in flight, the mean over ranks
    transfer_ms: float  # the median, per step, of the least time in flight on any rank: the collectives' own time,
    # which no rank's lateness is in (the last to arrive waited for no one)
    run_step_ms: float = 0.0  # the run's median step over the same points (every stretch's): the usual step
    # the rank the others waited for in it (analysis/lateness.py: the median of its cost per step, the one rule for
    # who), where that is a tenth of the stretch's step or more and its weighed steps cover half the stretch's; None
    # where none was
    late_rank: int | None = None
    late_host: str = ""
    late_ms: float = 0.0  # the others' median wait for it per step in this stretch


@dataclass(frozen=True)
class ChangePoint:
    """Where the run changed: its step (between two stretches), or its communication alone."""

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
    late_ms: float = 0.0  # how much longer the others waited for it per step, after against before (medians;
    # negative where they stopped waiting for it and the step got shorter)
    # "step": the step changed (a boundary between two stretches); "communication": the collectives' own time
    # (Stretch.transfer_ms) changed while the step did not, hidden by overlap or by computation's noise
    kind: str = "step"
    transfer_ms_before: float = 0.0
    transfer_ms_after: float = 0.0
    # the first step the change may lie at: the steps from it to `step` were left out (the profiler's reach, the
    # first steps), so it lies somewhere in earliest_step..step
    earliest_step: int = 0


@dataclass(frozen=True)
class DimensionRun:
    """One dimension (a mesh dimension's name, else its groups' role) over the whole run: its collectives' time in
    flight per step (each rank's median over the steps kept in full, the mean over ranks) and calls per step."""

    dimension: str
    groups: list[list[int]]  # its process groups' members, global ranks
    comm_ms: float
    calls_per_step: float
    rank_comm_ms: dict[str, float] = field(default_factory=dict)


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
    stretches: list[Stretch] = field(default_factory=list)  # the run cut at its step's changes; one where it held
    changes: list[ChangePoint] = field(default_factory=list)  # in step order: the step's, and communication's alone
    compiled_steps: list[int] = field(default_factory=list)  # torch.compile compiled in them: left out of the above
    compiled_ms: float = 0.0  # their time (the slowest rank's), those kept in full
    dimensions: list[DimensionRun] = field(default_factory=list)  # where the collectives ran over two or more
    clock_ms: float = 0.0  # the whole run's clock's own work per step, the mean over ranks: its cost to the job

    @property
    def step_changes(self) -> list[ChangePoint]:
        return [c for c in self.changes if c.kind == "step"]

    def stretch_of(self, first: int, last: int) -> Stretch | None:
        """The stretch steps first-last lie in; None where a change of step may lie in them, or the run held."""
        if len(self.stretches) < 2 or change_within(self.changes, first, last) is not None:
            return None
        return next((s for s in self.stretches if s.first_step <= first and last <= s.last_step), None)


def change_within(changes: list[ChangePoint], first: int, last: int) -> int | None:
    """The step of a change of step that may lie inside steps first-last (its step, or the left-out steps before it
    where it may be, among them), else None."""
    return next(
        (c.step for c in changes if c.kind == "step" and c.step > first and (c.earliest_step or c.step) <= last), None
    )
