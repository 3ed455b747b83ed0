"""The cross-rank section as rows and a summary, for every renderer: what each rank waits for and makes others
wait, and who the straggler is."""

from __future__ import annotations

from commprof.render.tables import MAX_RANK_ROWS, QUANTILES, TOP_RANKS, quantile
from commprof.results.common import PRACTICAL_SHARE, interval_text
from commprof.results.report import Clocks, CrossRank, RankSkew, Report

SKEW_HEADERS = ("rank", "step ms", "wait ms", "transfer ms", "makes others wait ms", "arrived last", "clock offset us")


def skew_row(r: RankSkew) -> tuple[str, ...]:
    return (
        str(r.rank),
        f"{r.median_step_ms:.1f}",
        f"{r.wait_ms:.2f}",
        f"{r.transfer_ms:.2f}",
        f"{r.wait_caused_ms:.2f}",
        str(r.last_arrivals),
        f"{r.clock_offset_us:.0f}",
    )


def skew_rows(skew: CrossRank) -> list[tuple[str, ...]]:
    """One row per rank; or, for many ranks, quantiles of wait and transfer, then the ranks that cost the others
    the most waiting."""
    if len(skew.ranks) <= MAX_RANK_ROWS:
        return [skew_row(r) for r in skew.ranks]
    rows = []
    for name, q in QUANTILES:

        def value(attr: str, q: float = q) -> float:
            return quantile([getattr(r, attr) for r in skew.ranks], q)

        rows.append(
            (
                f"{name} of {len(skew.ranks)}",
                f"{value('median_step_ms'):.1f}",
                f"{value('wait_ms'):.2f}",
                f"{value('transfer_ms'):.2f}",
                f"{value('wait_caused_ms'):.2f}",
                f"{value('last_arrivals'):.0f}",
                f"{value('clock_offset_us'):.0f}",
            )
        )
    by_rank = {r.rank: r for r in skew.ranks}
    costly = [by_rank[rank] for rank in skew.costliest[:TOP_RANKS]]
    return rows + [(f"rank {r.rank} (costliest #{i + 1})", *skew_row(r)[1:]) for i, r in enumerate(costly)]


def skew_summary(report: Report) -> str:
    skew = report.cross_rank
    assert skew is not None, "only for a report with a cross-rank analysis"
    parts = [f"{skew.matched_collectives} collectives matched across ranks; clocks: {clocks_text(skew.alignment)}."]
    if report.missing_ranks:
        parts.append(f"Only the {len(skew.ranks)} ranks present: {len(report.missing_ranks)} have no trace here.")
    if skew.unmatched_calls:
        parts.append(
            f"{skew.unmatched_calls} call(s) matched no other rank's (send/recv without a named peer, or a "
            "collective missing on the other ranks)."
        )
    named = any(f.kind == "straggler" for f in report.findings)  # significant across steps, and worth acting on
    if skew.straggler is not None and not named:
        parts.append(
            f"No rank is a straggler worth acting on: rank {skew.straggler} made the others wait most in the "
            f"profiled steps, {skew.straggler_cost_ms:.2f} ms per step, {why_no_straggler(report)}."
        )
    elif skew.straggler is not None:
        where = ", ".join(f"{op} {ms:.2f} ms" for op, ms in skew.straggler_ops.items())
        by_rank = {r.rank: r for r in skew.ranks}
        others = [by_rank[rank] for rank in skew.costliest if rank != skew.straggler][:2]
        runner_up = (
            "; next: " + ", ".join(f"rank {r.rank} ({r.wait_caused_ms:.2f} ms)" for r in others) if others else ""
        )
        parts.append(
            f"Straggler: rank {skew.straggler}, which makes the others wait {skew.straggler_cost_ms:.2f} ms per "
            f"step in all (at {where}){runner_up}. When it arrives last, the others wait "
            f"{skew.straggler_late_ms:.2f} ms for it."
        )
    why = (
        f": its steps are the longest because they include waiting; rank {skew.straggler}'s make the others wait"
        if named and skew.slowest_rank != skew.straggler
        else ""
    )
    parts.append(f"Step time spread: {skew.step_spread_ms:.1f} ms (slowest rank {skew.slowest_rank}{why}).")
    return " ".join(parts)


def why_no_straggler(report: Report) -> str:
    """The one test the most waited-for rank failed, as analysis/findings decided it: its finding kept within the
    noise says which of the claim's two conditions its interval failed (excludes 0 first: late in every step, then
    the practical share); no finding at all means fewer than two steps to weigh."""
    weighed = next((f for f in report.within_noise if f.kind == "straggler"), None)
    gain = weighed.gain_ms if weighed is not None else None
    if weighed is None or gain is None:
        return "over fewer than two steps, too few to tell whether it is late in every step"
    value, interval = interval_text(gain)
    weighed_as = f"weighed over the run's steps, its cost is {value} ms per step ({interval})"
    if gain.low <= 0:
        return f"but not late consistently: {weighed_as}, an interval that includes 0{_late_in_stretches(report)}"
    share = f", {weighed.gain_pct:.1f}% of the step" if weighed.gain_pct is not None else ""
    under = f"under {PRACTICAL_SHARE:.0%} of the step"
    return f"late consistently ({weighed_as}{share}) but {under}{_late_in_stretches(report)}"


def _late_in_stretches(report: Report) -> str:
    """'; it was late in steps 40-79 only: the others waited 60.0 ms a step for it there (the whole run, below)':
    a rank late in one stretch of the run, whose cost the run's median does not show."""
    whole, skew = report.whole_run, report.cross_rank
    if whole is None or skew is None or len(whole.stretches) < 2:
        return ""
    late = [s for s in whole.stretches if s.late_rank is not None]
    if not late:
        return ""
    mine = [s for s in late if s.late_rank == skew.straggler] or [s for s in late if s.late_rank == late[0].late_rank]
    where = " and ".join(f"steps {s.first_step}-{s.last_step}" for s in mine)
    who = "it" if mine[0].late_rank == skew.straggler else f"rank {mine[0].late_rank}"
    ms = "; ".join(f"{s.late_ms:.1f} ms" for s in mine)
    return f"; {who} was late in {where} only: the others waited {ms} a step for it there (the whole run, below)"


def clocks_text(clocks: Clocks) -> str:
    """How the ranks' clocks were aligned, in words."""
    if clocks.how == "one host":
        return "none needed: all ranks on one host share a clock"
    if clocks.how == "measured":
        return (
            f"offsets of {clocks.hosts} hosts measured at start by round trips to rank 0 (run.json; error at most "
            f"{clocks.error_us:.0f} us)"
        )
    if clocks.how == "collectives":
        return (
            f"aligned {clocks.hosts} hosts on the ends of matched synchronising collectives (reference: rank "
            f"{clocks.reference})"
        )
    return clocks.said
