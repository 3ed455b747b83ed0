"""The job's process groups and mesh dimensions in words and tables: a collective's group ("tp 0,1 2,3"), the By
dimension table, and the headline's clause naming the dimension whose collectives leave the most exposed."""

from __future__ import annotations

import statistics

from commprof.results.report import Report

MOST_GROUPS_LISTED = 4


def over(group: str | None, members: list[list[int]]) -> str:
    """A collective's process group in a table: its dimension with each group's ranks ("tp 0,1 2,3"), or how many
    groups of how many ranks where they are many; "-" where not known."""
    if group is None:
        return "-"
    if len(members) > MOST_GROUPS_LISTED:
        sizes = sorted({len(m) for m in members})
        return f"{group} ({len(members)} groups of {'/'.join(map(str, sizes))})"
    return " ".join([group, *(ranks_text(m) for m in members)])


def ranks_text(ranks: list[int]) -> str:
    """Ranks as a reader takes them in: runs of consecutive ranks as ranges ("0-511", "0,2", "0-3,8-11")."""
    runs: list[list[int]] = []
    for rank in sorted(ranks):
        if runs and rank == runs[-1][1] + 1:
            runs[-1][1] = rank
        else:
            runs.append([rank, rank])
    return ",".join(f"{lo}-{hi}" if hi > lo + 1 else ",".join(map(str, range(lo, hi + 1))) for lo, hi in runs)


DIMENSION_HEADERS = ("dimension", "groups", "calls/step", "comm ms", "exposed ms", "exposed of step")


def dimension_rows(report: Report) -> list[tuple[str, ...]]:
    step = statistics.fmean(r.step_time_ms.mean for r in report.ranks) if report.ranks else 0.0
    return [
        (
            d.dimension,
            " ".join(ranks_text(m) for m in d.groups) or "-",
            f"{d.calls_per_step:.1f}",
            f"{d.comm_ms:.1f}",
            f"{d.exposed_ms:.1f}",
            f"{100 * d.exposed_ms / step:.0f}%" if step > 0 else "-",
        )
        for d in report.dimensions
    ]


def costliest_dimension(report: Report) -> str:
    """The dimension whose exposed communication costs the step most, in a clause; "" where the report has none."""
    if not report.dimensions:
        return ""
    top = report.dimensions[0]  # analysis/groups.py ranks them by exposed time
    step = statistics.fmean(r.step_time_ms.mean for r in report.ranks) if report.ranks else 0.0
    share = f" ({100 * top.exposed_ms / step:.0f}% of the step)" if step > 0 else ""
    return f"; of the dimensions, {top.dimension}'s collectives leave the most exposed, {top.exposed_ms:.1f} ms{share}"


def pipeline_text(report: Report) -> str:
    """'Pipeline stages, per profiled step: stage 0 (ranks 0,1) waits 13.3 ms for its neighbours (33% of its step);
    stage 1 (ranks 2,3) 15.1 ms (37%).': each stage's exposed sends and receives, its bubble with the transfers."""
    said = []
    for i, stage in enumerate(report.pipeline):
        share = f" ({stage.wait_ms / stage.step_ms:.0%}{' of its step' if i == 0 else ''})" if stage.step_ms else ""
        waits = " waits" if i == 0 else ""
        neighbours = " for its neighbours" if i == 0 else ""
        said.append(
            f"stage {stage.stage} (ranks {ranks_text(stage.ranks)}){waits} {stage.wait_ms:.1f} ms{neighbours}{share}"
        )
    return f"Pipeline stages, per profiled step: {'; '.join(said)}."
