"""The ranks' whole-run records -> the report's whole-run section: every step of the run, the steps that stood
out and the rank that made each slow, and whether the profiled window looked like the run (docs/semantics.md,
Whole run)."""

from __future__ import annotations

import math
import statistics
from typing import Callable

from commprof.analysis.distortion import SKIP_FIRST_STEPS
from commprof.analysis.lateness import Ledger, Members, late_rank, who
from commprof.analysis.stretches import stretches_and_changes
from commprof.analysis.whole_run_groups import dimension_runs
from commprof.config import ProfileSchedule
from commprof.results.step_ledger import BIN_RATIO, RankLedger, StepEntry, bin_floor_ms, quantile_ms
from commprof.results.whole_run import (
    ChangePoint,
    StandOut,
    Stretch,
    WholeRun,
    WholeRunPoint,
    WindowCheck,
    change_within,
)

STANDOUT = 1.5  # a step slower than this many times the run's median stands out ...
JITTER = 10  # ... and slower than the median by this many times the run's own spread (scaled MAD)
MAD_TO_SIGMA = 1.4826
MAX_LISTED = 20
PROFILER_NOTED = 0.1  # a window's median this much from the run's is said to be the profiler's cost


def whole_run(
    ledgers: dict[int, RankLedger],
    schedule: ProfileSchedule | None,
    compiled: frozenset[int] = frozenset(),
    late: Ledger | None = None,
) -> WholeRun | None:
    """`schedule`: the profiler's, None when nothing was profiled; `compiled`: the steps in which torch.compile
    compiled (results/run_record.Compiled), left out of the run's figures and said apart; `late`: the run's lateness
    ledger (`lateness_ledger`), computed here where not given. None without records (a run made with --no-whole-run,
    traces from elsewhere) or without a step."""
    ledgers = {rank: ledger for rank, ledger in ledgers.items() if ledger.steps}
    late = late if late is not None else lateness_ledger(ledgers, schedule, compiled)
    if not ledgers:
        return None
    histogram: dict[int, int] = {}
    for ledger in ledgers.values():
        for b, n in ledger.histogram.items():
            histogram[b] = histogram.get(b, 0) + n
    by_step = _kept_steps(ledgers)
    compiling = {step: by_step.pop(step) for step in compiled if step in by_step}
    every_step_kept = all(len(ledger.entries()) >= ledger.steps for ledger in ledgers.values())
    times = [e.step_ms for ranks in by_step.values() for e in ranks.values()] if every_step_kept else []
    median = statistics.median(times) if times else quantile_ms(histogram, 0.5)
    spread = _spread(times or _from_histogram(histogram), median)

    def bar(usual: float) -> float:
        """Slower than this stands out: STANDOUT times the usual step, and beyond the run's own jitter."""
        return usual + max((STANDOUT - 1) * usual, JITTER * spread)

    threshold = bar(median)
    steps = min(ledger.steps for ledger in ledgers.values())
    standouts = _standouts(by_step, median, schedule, bar, members_of(ledgers))
    count = len(standouts) if every_step_kept else max(ledger.steps_over(threshold) for ledger in ledgers.values())
    listed = sorted(sorted(standouts, key=lambda s: -s.step_ms)[:MAX_LISTED], key=lambda s: s.step)
    lost: dict[int, float] = {}
    for standout in standouts:
        if standout.rank is not None:
            lost[standout.rank] = lost.get(standout.rank, 0.0) + standout.lost_ms
    slow_rank = who(lost)
    comm = [e.comm_ms for ranks in by_step.values() for e in ranks.values()]
    series = _series(ledgers)
    hosts = {rank: ledger.host for rank, ledger in ledgers.items()}
    last_step = max(p.first_step + p.steps - 1 for p in series)
    stretches, changes = stretches_and_changes(series, _reach(schedule) | compiled, late, hosts, last_step)
    window = None
    if schedule is not None:
        window = _window_check(schedule.profiled_steps, by_step, median, count, steps, bar, stretches, changes)
    return WholeRun(
        timed_by=next((ledger.timed_by for ledger in ledgers.values() if ledger.timed_by), ""),
        ranks=sorted(ledgers),
        steps=steps,
        block_steps=max(ledger.block_steps for ledger in ledgers.values()),
        median_step_ms=median,
        median_comm_ms=statistics.median(comm) if comm else 0.0,
        threshold_ms=threshold,
        standout_count=count,
        standouts=listed,
        lost_ms=sum(standout.lost_ms for standout in standouts),
        slow_rank=slow_rank,
        slow_rank_steps=sum(standout.rank == slow_rank for standout in standouts) if slow_rank is not None else 0,
        slow_rank_lost_ms=lost.get(slow_rank, 0.0) if slow_rank is not None else 0.0,
        slow_rank_every=_period([s for s in standouts if s.rank == slow_rank]) if slow_rank is not None else None,
        window=window,
        series=series,
        stretches=stretches,
        changes=changes,
        compiled_steps=sorted(compiled),
        compiled_ms=sum(_slowest(ranks) for ranks in compiling.values()),
        dimensions=dimension_runs(ledgers, frozenset(compiled)),
        clock_ms=statistics.fmean(ledger.clock_ms / ledger.steps for ledger in ledgers.values()),
    )


def _kept_steps(ledgers: dict[int, RankLedger]) -> dict[int, dict[int, StepEntry]]:
    """step -> rank -> the step as that rank recorded it, for the steps kept in full."""
    by_step: dict[int, dict[int, StepEntry]] = {}
    for rank, ledger in ledgers.items():
        for step, entry in ledger.entries().items():
            by_step.setdefault(step, {})[rank] = entry
    return by_step


def _spread(times: list[float], median: float) -> float:
    """The step times' median absolute deviation, scaled to a normal distribution's standard deviation: the run's
    own jitter, which the steps of a few stalls do not move."""
    return MAD_TO_SIGMA * statistics.median(abs(t - median) for t in times) if times else 0.0


def _from_histogram(histogram: dict[int, int]) -> list[float]:
    """Each counted step at its bin's middle (to 5%)."""
    return [bin_floor_ms(b) * math.sqrt(BIN_RATIO) for b, n in histogram.items() for _ in range(n)]


def _standouts(
    by_step: dict[int, dict[int, StepEntry]],
    median: float,
    schedule: ProfileSchedule | None,
    bar: Callable[[float], float],
    members: Members | None = None,
) -> list[StandOut]:
    """The steps kept in full that are slower than `bar` of the usual step: the run's median, or for the steps the
    profiler recorded (its warm-up and window, which it slows alike) theirs. The first SKIP_FIRST_STEPS
    (warm-up) and the step after the window (the ranks write their traces in it) are slow by commprof's doing or
    the job's start, and never stand out."""
    skipped = set(range(1, SKIP_FIRST_STEPS + 1))
    profiled: set[int] = set()
    if schedule is not None:
        profiled = set(range(schedule.wait + 1, schedule.total + 1))
        skipped.add(schedule.total + 1)
    profiled_times = [_slowest(by_step[s]) for s in profiled if s in by_step]
    profiled_median = statistics.median(profiled_times) if profiled_times else median
    found = []
    for step, ranks in sorted(by_step.items()):
        usual = profiled_median if step in profiled else median
        if step not in skipped and _slowest(ranks) > bar(usual):
            found.append(_stand_out(step, ranks, usual, members))
    return found


def _period(standouts: list[StandOut]) -> int | None:
    """N when the largest of these stand-outs (those that lost at least half as much as the largest) come every N
    steps: at least three, two thirds of the gaps between them N."""
    if not standouts:
        return None
    largest = max(s.lost_ms for s in standouts)
    steps = [s.step for s in standouts if s.lost_ms >= largest / 2]
    gaps = [b - a for a, b in zip(steps, steps[1:], strict=False)]
    if len(steps) < 3:
        return None
    gap = statistics.mode(gaps)
    return gap if gaps.count(gap) * 3 >= len(gaps) * 2 else None


def _slowest(ranks: dict[int, StepEntry]) -> float:
    return max(e.step_ms for e in ranks.values())


def _stand_out(step: int, ranks: dict[int, StepEntry], median: float, members: Members | None = None) -> StandOut:
    """The step as the slowest rank saw it, against `median`, the usual step. The rank that made it slow is the
    one the others waited for the longest (analysis/lateness.py); they waited for it inside one collective (the
    longest they had)."""
    step_ms = max(e.step_ms for e in ranks.values())
    busy = {rank: e.step_ms - e.comm_ms for rank, e in ranks.items()}
    slow = late_rank(ranks, members)
    waits = [max(e.calls, key=lambda c: c.duration_ms) for r, e in ranks.items() if r != slow and e.calls]
    longest = max(waits, key=lambda c: c.duration_ms) if waits else None
    return StandOut(
        step=step,
        step_ms=step_ms,
        times_median=step_ms / median if median else 0.0,
        lost_ms=step_ms - median,
        rank=slow,
        busy_ms=busy[slow] if slow is not None else 0.0,
        collective=longest.op if longest else None,
        collective_bytes=longest.bytes if longest else None,
        waited_ms=statistics.median(c.duration_ms for c in waits) if waits else 0.0,
    )


def _window_check(
    window: tuple[int, int],
    by_step: dict[int, dict[int, StepEntry]],
    median: float,
    run_standouts: int,
    steps: int,
    bar: Callable[[float], float],
    stretches: list[Stretch],
    changes: list[ChangePoint],
) -> WindowCheck | None:
    """The profiler slows every step it records alike, so a step stands out in the window against the window's own
    median. A run that went through several stretches has no window typical of all of it: the window is set against
    the stretch it lies in, and one that holds a change of step is typical of none."""
    first, last = window[0], min(window[1], max(by_step, default=window[1]))  # a script may end inside it
    times = [max(e.step_ms for e in by_step[s].values()) for s in range(first, last + 1) if s in by_step]
    if not times:
        return None
    length = len(times)
    window_median = statistics.median(times)
    inside = sum(t > bar(window_median) for t in times)
    expected = run_standouts * length / steps if steps else 0.0
    held = change_within(changes, first, last)
    stretch = (
        None if held is not None else next((s for s in stretches if s.first_step <= first <= last <= s.last_step), None)
    )
    against = stretch.step_ms if stretch is not None and len(stretches) > 1 else median
    missed = run_standouts >= 2 and inside == 0 and expected >= 0.5
    more = inside >= 1 and inside > max(1.0, 2 * expected)
    return WindowCheck(
        first_step=first,
        last_step=last,
        median_ms=window_median,
        standouts=inside,
        expected_standouts=expected,
        typical=not (missed or more or held is not None),
        against_ms=against,
        run_standouts=run_standouts,
        run_steps=steps,
        missed_standouts=missed,
        more_standouts=more,
        stretch=(stretch.first_step, stretch.last_step) if stretch is not None and len(stretches) > 1 else None,
        holds_change=held,
        slowed_by_profiler=against > 0 and window_median / against - 1 > PROFILER_NOTED,
        length=length,
    )


def _series(ledgers: dict[int, RankLedger]) -> list[WholeRunPoint]:
    """One point per block: the blocks of the rank with the largest ones, the others' blocks that share its first
    step beside them."""
    widest = max(ledgers.values(), key=lambda ledger: ledger.block_steps)
    others = {rank: {b.first: b for b in ledger.blocks} for rank, ledger in ledgers.items()}
    points = []
    for block in widest.blocks:
        same = [blocks[block.first] for blocks in others.values() if block.first in blocks]
        same = [b for b in same if b.steps == block.steps] or [block]
        points.append(
            WholeRunPoint(
                first_step=block.first,
                steps=block.steps,
                step_ms=max(b.step_ms_sum / b.steps for b in same),
                step_ms_max=max(b.step_ms_max for b in same),
                comm_ms=statistics.fmean(b.comm_ms_sum / b.steps for b in same),
                transfer_ms=min(b.comm_ms_sum / b.steps for b in same),
            )
        )
    return points


def _reach(schedule: ProfileSchedule | None) -> set[int]:
    """The steps the profiler slows or that start the run: its window and the step after it, the first steps."""
    reach = set(range(1, SKIP_FIRST_STEPS + 1))
    if schedule is not None:
        reach |= set(range(schedule.wait + 1, schedule.total + 2))
    return reach


def lateness_ledger(
    ledgers: dict[int, RankLedger], schedule: ProfileSchedule | None, compiled: frozenset[int] = frozenset()
) -> Ledger:
    """What each rank cost the others at each step weighed (analysis/lateness.Ledger): each step every rank kept in
    full after the first SKIP_FIRST_STEPS, outside the profiler's reach and the compile steps; none where a rank's
    collectives were not timed."""
    if len(ledgers) < 2 or not all(ledger.timed_by for ledger in ledgers.values()):
        return Ledger({}, {})
    reach = _reach(schedule) | compiled
    return Ledger.of(
        {
            step: ranks
            for step, ranks in sorted(_kept_steps(ledgers).items())
            if step not in reach and len(ranks) == len(ledgers)
        },
        members_of(ledgers),
    )


def members_of(ledgers: dict[int, RankLedger]) -> Members:
    """Each rank's process groups, by name, with their members (its record's)."""
    return {rank: {name: tuple(g.ranks) for name, g in ledger.groups.items()} for rank, ledger in ledgers.items()}
