"""The report's whole-run section (Report.whole_run): every step of the run on every rank, the steps that stood out
and who made them slow, and whether the profiled window looked like the rest of the run. Its plot is
plots.whole_run_plot, its TensorBoard scalars tensorboard.py's `whole_run/` run."""

from __future__ import annotations

from commprof.render.document import Block, Figure, Section, Table, Text
from commprof.results.job import BuiltDDP, BuiltDeepSpeed, BuiltFSDP, BuiltHorovod, Job
from commprof.results.report import Report
from commprof.results.whole_run import ChangePoint, StandOut, Stretch, WholeRun, WindowCheck
from commprof.values import human_bytes

TITLE = "Whole run (every step, every rank)"
FIGURE = "whole_run.png"
STANDOUT_HEADERS = ("step", "step ms", "x median", "slow rank", "busy ms", "others waited in", "waited ms")
STANDOUT_NOTE = (
    "Listed in step order. step ms: the slowest rank's time for the step; slow rank: the rank with the most time "
    "outside collectives in the step, busy ms that time; others waited in: the collective the other ranks waited in "
    "meanwhile, waited ms how long it took on them (their median)."
)


def whole_run_sections(report: Report) -> list[Section]:
    """The section, or none for a report without a whole-run record (traces from elsewhere, --no-whole-run)."""
    whole = report.whole_run
    if whole is None:
        return []
    blocks: list[Block] = [Text(summary(whole, _untimed_why(report))), *change_blocks(whole), *standout_blocks(whole)]
    if whole.window is not None:
        blocks.append(window_text(whole.window))
    blocks += [Text(figure_caption(whole)), Figure(FIGURE, "step time over the whole run")]
    return [Section(TITLE, blocks)]


def _untimed_why(report: Report) -> str:
    """Why a run's collectives were not timed outside the profiler: the kind of job it was."""
    job = report.run.job if report.run is not None else Job()
    engine, horovod = job.first(BuiltDeepSpeed), job.first(BuiltHorovod)
    if engine is not None and job.first(BuiltDDP) is None:
        return f"the run trains with DeepSpeed (ZeRO stage {engine.zero_stage})"
    if horovod is not None:
        return "the run trains with Horovod (its collectives read from its timeline)"
    if job.first(BuiltFSDP) is not None:
        return "the run shards its model with FSDP"
    return "no DistributedDataParallel in the run (or FSDP)"


def summary(whole: WholeRun, untimed_why: str = "no DistributedDataParallel in the run (or FSDP)") -> str:
    steps = f"{whole.steps:,} step{_s(whole.steps)} on {len(whole.ranks)} rank{_s(len(whole.ranks))}"
    if not whole.timed_by:
        return (
            f"{steps}; median step {whole.median_step_ms:.1f} ms. The steps were timed but no collective was: "
            f"{untimed_why}, whose collectives are measured in the profiled window only."
        )
    cost = ""
    if whole.clock_ms and whole.median_step_ms:
        share = whole.clock_ms / whole.median_step_ms
        cost = f" The clock's own work took {whole.clock_ms:.2f} ms a step ({share:.1%} of the step)."
    return (
        f"{steps}; median step {whole.median_step_ms:.1f} ms, {whole.median_comm_ms:.2f} ms of it with a collective "
        f"in flight{_per_dimension(whole)}; collectives timed by {whole.timed_by}.{cost}"
    )


def _per_dimension(whole: WholeRun) -> str:
    """' (dp 22.1 ms in 9 collectives a step, tp 16.0 ms in 5)': where the run's collectives ran over several."""
    if not whole.dimensions:
        return ""
    first, *rest = whole.dimensions
    said = [f"{first.dimension} {first.comm_ms:.1f} ms in {first.calls_per_step:.0f} collectives a step"]
    said += [f"{d.dimension} {d.comm_ms:.1f} ms in {d.calls_per_step:.0f}" for d in rest]
    return f" ({', '.join(said)})"


def threshold(whole: WholeRun) -> str:
    """'150.0 ms, 1.5x the median': the ratio read from the numbers, so it says what the analysis used."""
    ratio = f", {whole.threshold_ms / whole.median_step_ms:.1f}x the median" if whole.median_step_ms > 0 else ""
    return f"{whole.threshold_ms:.1f} ms{ratio}"


STRETCH_HEADERS = ("steps", "step ms", "against the run", "in flight ms", "collectives' own ms", "late rank")
STRETCH_NOTE = (
    "step ms: the stretch's median step (slowest rank), against the run's median step; in flight ms: its "
    "median time per step with a collective in flight (the mean over ranks); collectives' own ms: the least of it on "
    "any rank, no rank's lateness in it; late rank: the rank the others waited for there, and how long per step."
)


def change_blocks(whole: WholeRun) -> list[Block]:
    """The run's stretches, where its step changed, each with its steps, its size against the run, what grew and
    the rank late in it; then each change of its communication alone."""
    blocks: list[Block] = []
    if len(whole.stretches) > 1:
        parts = "; ".join(stretch_text(s) for s in whole.stretches)
        blocks += [
            Text(
                f"The run went through {len(whole.stretches)} stretches (its step cut where it changed): {parts}. "
                "Figures of the profiled window describe the stretch it lies in.",
                "alert",
            ),
            Text(STRETCH_NOTE),
            Table(STRETCH_HEADERS, [stretch_row(s) for s in whole.stretches], left=("late rank",)),
        ]
        blocks += [Text(f"At step {c.step}: {change_text(c)}.") for c in whole.step_changes]
    blocks += [Text(communication_text(c) + ".", "alert") for c in whole.changes if c.kind == "communication"]
    return blocks


def _steps(first: int, last: int) -> str:
    return f"step {first}" if first == last else f"steps {first}-{last}"


def stretch_text(stretch: Stretch) -> str:
    """'steps 40-80: 74.1 ms a step (+389% against the run's), rank 0 late: the others waited 59.8 ms a step for it'."""
    ratio = stretch.step_ms / stretch.run_step_ms - 1 if stretch.run_step_ms else 0.0
    steps = _steps(stretch.first_step, stretch.last_step)
    said = f"{steps}: {stretch.step_ms:.1f} ms a step ({ratio:+.0%} against the run's)"
    return said + (f", {late_in_text(stretch)}" if stretch.late_rank is not None else "")


def late_in_text(stretch: Stretch) -> str:
    where = f" on {stretch.late_host}" if stretch.late_host else ""
    return f"rank {stretch.late_rank}{where} late: the others waited {stretch.late_ms:.1f} ms a step for it"


def stretch_row(stretch: Stretch) -> tuple[str, ...]:
    ratio = stretch.step_ms / stretch.run_step_ms - 1 if stretch.run_step_ms else 0.0
    late = "-" if stretch.late_rank is None else f"rank {stretch.late_rank}, {stretch.late_ms:.1f} ms"
    return (
        f"{stretch.first_step}-{stretch.last_step}",
        f"{stretch.step_ms:.1f}",
        f"{ratio:+.0%}",
        f"{stretch.comm_ms:.1f}",
        f"{stretch.transfer_ms:.1f}",
        late,
    )


def change_text(change: ChangePoint) -> str:
    """A change of step: 'the step went from 15.2 to 74.1 ms (+389%), the time with a collective in flight per step
    from 0.6 to 30.4 ms: rank 0 came late ...'."""
    ratio = change.step_ms_after / change.step_ms_before - 1 if change.step_ms_before else 0.0
    return (
        f"the step went from {change.step_ms_before:.1f} to {change.step_ms_after:.1f} ms ({ratio:+.0%}), the time "
        f"with a collective in flight per step from {change.comm_ms_before:.1f} to {change.comm_ms_after:.1f} ms: "
        f"{late_text(change) or GREW.get(change.grew, UNTIMED)}"
    )


def communication_text(change: ChangePoint) -> str:
    """A change of the collectives' own time while the step held."""
    ratio = change.transfer_ms_after / change.transfer_ms_before - 1 if change.transfer_ms_before else 0.0
    return (
        f"The communication alone changed at step {change.step}: the collectives' own time (the least time in flight "
        f"on any rank) went from {change.transfer_ms_before:.1f} to {change.transfer_ms_after:.1f} ms per step "
        f"({ratio:+.0%}), the time with a collective in flight from {change.comm_ms_before:.1f} to "
        f"{change.comm_ms_after:.1f} ms, while the step showed no change of its own "
        f"({change.step_ms_before:.1f} ms before, {change.step_ms_after:.1f} after): hidden by the computation it "
        "overlaps or by its noise, a link or a peer's network that slowed"
    )


UNTIMED = "no collective was timed outside the profiler, so what grew is not known"
GREW = {
    "communication": "the time with a collective in flight moved with it (a link or a peer that slowed)",
    "computation": "the time with a collective in flight did not (computation, input or Python moved)",
    "both": "the time with a collective in flight moved with it in part",
}


def late_text(change: ChangePoint) -> str:
    """'rank 3 on node1 came late: the others waited 30.2 ms longer for it per step' (its own work grew, not a link);
    "" where no one rank did."""
    if change.late_rank is None:
        return ""
    where = f" on {change.late_host}" if change.late_host else ""
    if change.late_ms < 0:
        return (
            f"rank {change.late_rank}{where} stopped coming late: the others waited {-change.late_ms:.1f} ms less "
            "for it per step"
        )
    return (
        f"rank {change.late_rank}{where} came late: the others waited {change.late_ms:.1f} ms longer for it per step "
        "(its own work grew, not a link)"
    )


def change_line(change: ChangePoint) -> str:
    """The change in a few words, for a line of progress: 'the step changed at step 42, 267.0 to 818.0 ms (+206%):
    the time with a collective in flight moved with it'."""
    if change.kind == "communication":
        return (
            f"the communication alone changed at step {change.step}, its own time {change.transfer_ms_before:.1f} to "
            f"{change.transfer_ms_after:.1f} ms, the step held"
        )
    ratio = change.step_ms_after / change.step_ms_before - 1 if change.step_ms_before else 0.0
    return (
        f"the step changed at step {change.step}, {change.step_ms_before:.1f} to {change.step_ms_after:.1f} ms "
        f"({ratio:+.0%}): {late_text(change) or GREW_SHORT.get(change.grew, UNTIMED)}"
    )


GREW_SHORT = {
    "communication": "the time with a collective in flight moved with it",
    "computation": "the time with a collective in flight did not",
    "both": "the time with a collective in flight in part",
}


def standout_blocks(whole: WholeRun) -> list[Block]:
    if whole.standout_count == 0:
        return [Text(f"No step stood out: none slower than {threshold(whole)}.")]
    count = whole.standout_count
    listed = len(whole.standouts)
    slowest = f"; the {listed} slowest listed" if 0 < listed < count else ""
    line = f"{count:,} step{_s(count)} stood out (slower than {threshold(whole)}{slowest})"
    if whole.slow_rank is not None:
        every = f", the largest every {whole.slow_rank_every} steps" if whole.slow_rank_every else ""
        line += (
            f"; rank {whole.slow_rank} made {whole.slow_rank_steps} of them slow{every}: "
            f"{whole.slow_rank_lost_ms:,.0f} ms of the {whole.lost_ms:,.0f} ms they took beyond the usual step"
        )
    blocks: list[Block] = [Text(f"{line}.", "alert")]
    if listed:
        rows = [standout_row(s) for s in whole.standouts]
        blocks += [Text(STANDOUT_NOTE), Table(STANDOUT_HEADERS, rows, left=("others waited in",))]
    return blocks


def standout_row(s: StandOut) -> tuple[str, ...]:
    return (
        str(s.step),
        f"{s.step_ms:.1f}",
        f"{s.times_median:.2f}x",
        "-" if s.rank is None else str(s.rank),
        "-" if s.rank is None else f"{s.busy_ms:.1f}",
        f"{s.collective} of {human_bytes(s.collective_bytes)}" if s.collective else "-",
        f"{s.waited_ms:.2f}" if s.collective else "-",
    )


def window_text(window: WindowCheck) -> Text:
    steps = _steps(window.first_step, window.last_step)
    if window.why and not window.run_steps:  # a report from before its reasons were kept as facts
        said = "was typical of the run" if window.typical else "was not typical of the run"
        return Text(
            f"The profiled window ({steps}) {said}: {window.why.strip().rstrip('.')}.",
            "plain" if window.typical else "alert",
        )
    length = window.length or window.last_step - window.first_step + 1
    reasons = []
    if window.missed_standouts:
        reasons.append(
            f"none of its {length} steps stood out, while "
            f"{window.run_standouts:,} of the run's {window.run_steps:,} did ({window.expected_standouts:.1f} expected "
            "in a window this long): it shows the run without them"
        )
    elif window.more_standouts or window.typical:
        reasons.append(
            f"{window.standouts} of its {length} steps stood out, against "
            f"{window.run_standouts:,} of the run's {window.run_steps:,}"
        )
    if window.holds_change is not None:
        reasons.append(f"the run's step changed inside it, at step {window.holds_change}")
    whose = "its stretch's" if window.stretch is not None else "the run's"
    profiler = ", slowed by the profiler (its own cost: above)" if window.slowed_by_profiler else ""
    reasons.append(f"its median step {window.median_ms:.1f} ms against {whose} {window.against_ms:.1f} ms{profiler}")
    of = "the run"
    if window.stretch is not None:
        of = f"the stretch it lies in ({_steps(*window.stretch)})"
    verdict = "was typical of" if window.typical else "was not typical of"
    return Text(
        f"The profiled window ({steps}) {verdict} {of}: {'; '.join(reasons)}.", "plain" if window.typical else "alert"
    )


def figure_caption(whole: WholeRun) -> str:
    if whole.block_steps > 1:
        parts = [
            f"The slowest rank's step time over the run, in means of {whole.block_steps}-step blocks drawn at each "
            "block's first step",
            "each block's slowest step faint",
        ]
    else:
        parts = ["The slowest rank's time for each step of the run"]
    if whole.timed_by:
        parts.append("the time with a collective in flight per step")
    parts.append(f"the stand-out line at {whole.threshold_ms:.1f} ms")
    if whole.window is not None:
        parts.append("the profiled window shaded")
    if whole.standouts:
        parts.append("the listed stand-out steps as red crosses")
    return "; ".join(parts) + "."


def _s(n: int) -> str:
    return "" if n == 1 else "s"
