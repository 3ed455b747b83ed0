"""Markdown rendering of a Report (report.md)."""

from __future__ import annotations

from commprof.analysis.report import Report
from commprof.render.tables import (BREAKDOWN_HEADERS, COLLECTIVE_HEADERS, SKEW_HEADERS, breakdown_row,
                                    collective_row, headline, skew_row, skew_summary)


def _table(headers: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def render_markdown(report: Report) -> str:
    lines = [f"# commprof report: {report.name}", ""]
    run = report.run
    if run:
        lines += [f"- model: {run.get('model')} ({run.get('parameters', 0):,} parameters)",
                  f"- ranks: {run.get('world_size')} ({run.get('backend')} on {run.get('device')}), "
                  f"hosts: {', '.join(run.get('hosts', []))}",
                  f"- torch {run.get('versions', {}).get('torch')}", ""]
    lines += [f"Sources: {len(report.sources)} trace file(s). Created {report.created}.", ""]
    if any(r.comm_ms for r in report.ranks):
        lines += [f"**{headline(report)}.**", ""]
    lines += ["## Step time breakdown", "",
              "Milliseconds per profiled step (mean over steps; step time also as median and p95), "
              "and percent of the mean step. compute + exposed comm + idle = step.", ""]
    lines += _table(BREAKDOWN_HEADERS, [breakdown_row(r) for r in report.ranks]) + [""]
    lines += ["## Collectives", ""]
    if report.collectives:
        lines += _table(COLLECTIVE_HEADERS, [collective_row(c) for c in report.collectives]) + [""]
    else:
        lines += ["No collective ran in the profiled steps.", ""]
    if report.cross_rank is not None:
        lines += ["## Across ranks", "", "Wait: arrived early and waited for the last rank. Transfer: from the last "
                  "rank's arrival to the end. Per step.", ""]
        lines += _table(SKEW_HEADERS, [skew_row(r) for r in report.cross_rank.ranks]) + ["", skew_summary(report.cross_rank), ""]
    if report.skipped or report.warnings:
        lines += ["## Notes", ""]
        lines += [f"- skipped {s.path}: {s.reason}" for s in report.skipped]
        lines += [f"- {w}" for w in report.warnings] + [""]
    return "\n".join(lines)
