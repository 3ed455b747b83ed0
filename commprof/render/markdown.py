"""Markdown rendering of a Report (report.md)."""

from __future__ import annotations

from commprof.render.findings_text import ADVICE_HEADERS, advice_rows, finding_lines, has_findings
from commprof.render.skew_text import SKEW_HEADERS, skew_rows, skew_summary
from commprof.render.tables import (
    BREAKDOWN_HEADERS,
    COLLECTIVE_HEADERS,
    DDP_CHECK_HEADERS,
    GATHER_HEADERS,
    GATHER_NOTE,
    NOT_SIGNIFICANT,
    PHASE_HEADERS,
    PHASE_NOTE,
    TIMELINE_HEADERS,
    breakdown_notes,
    breakdown_rows,
    collective_row,
    ddp_check_row,
    gather_rows,
    headline,
    phase_rows,
    step_clock,
    sweep_table,
    timeline_row,
)
from commprof.results.report import Report


def markdown_table(headers: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def render_markdown(report: Report) -> str:
    lines = [f"# commprof report: {report.name}", ""]
    run = report.run
    if run:
        lines += [
            f"- model: {run.model} ({run.parameters or 0:,} parameters)",
            f"- ranks: {run.world_size} ({run.backend} on {run.device}), hosts: {', '.join(run.hosts)}",
            f"- torch {run.versions.get('torch')}",
            "",
        ]
    lines += [f"Sources: {len(report.sources)} trace file(s). Created {report.created}.", ""]
    if report.incomplete:
        lines += [f"> **INCOMPLETE:** {report.incomplete}", ""]
    if any(r.comm_ms for r in report.ranks):
        lines += [f"**{headline(report)}.**", ""]
    if has_findings(report):
        lines += ["## Findings", ""]
        for title, evidence, action in finding_lines(report):
            lines += [f"**{title}**" if action else f"{title}.", ""]
            if evidence:
                lines += [f"- evidence: {evidence}", *([f"- do: `{action}`"] if action else []), ""]
    if report.sweep is not None:
        lines += _sweep_section(report)
    lines += [
        "## Step time breakdown",
        "",
        "Milliseconds per profiled step (mean over steps; step time also as median and p95), "
        "and percent of the mean step. compute + exposed comm + copies (memcpy/memset only) + idle = step. "
        f"{step_clock(report)}.",
        "",
    ]
    extra = [f"{line}." for line in breakdown_notes(report)]
    lines += extra + ([""] if extra else [])
    lines += markdown_table(BREAKDOWN_HEADERS, breakdown_rows(report)) + ["", "![breakdown](breakdown.png)", ""]
    if report.timeline is not None:
        lines += [
            f"One step of rank {report.timeline.rank} ({report.timeline.step}, a step of median length):",
            "",
            "![timeline](timeline.png)",
            "",
        ]
    if report.phases:
        lines += ["## By phase", "", f"{PHASE_NOTE}.", ""] + markdown_table(PHASE_HEADERS, phase_rows(report)) + [""]
    if report.gathers:
        lines += ["## FSDP all-gathers by module", "", f"{GATHER_NOTE}.", ""]
        lines += markdown_table(GATHER_HEADERS, gather_rows(report)) + [""]
    lines += ["## Collectives", ""]
    if report.collectives:
        lines += markdown_table(COLLECTIVE_HEADERS, [collective_row(c) for c in report.collectives]) + [""]
    else:
        lines += ["No collective ran in the profiled steps.", ""]
    if report.cross_rank is not None:
        lines += [
            "## Across ranks",
            "",
            "Wait: arrived early and waited for the last rank. Transfer: from the last "
            "rank's arrival to the end. Per step.",
            "",
        ]
        lines += markdown_table(SKEW_HEADERS, skew_rows(report.cross_rank)) + ["", skew_summary(report), ""]
    if report.skipped or report.warnings:
        lines += ["## Notes", ""]
        lines += [f"- skipped {s.path}: {s.reason}" for s in report.skipped]
        lines += [f"- {w}" for w in report.warnings] + [""]
    return "\n".join(lines)


def _sweep_section(report: Report) -> list[str]:
    sweep = report.sweep
    assert sweep is not None, "only for a sweep's report"
    lines = [f"## {sweep.kind.capitalize()}", "", f"**{sweep.recommendation}**", ""]
    if sweep.paste:
        lines += ["```python", sweep.paste, "```", ""]
    lines += [
        f"Median step time of the job (slowest rank per step) over interleaved rounds, 95% bootstrap CI; "
        f"speedup against {sweep.baseline} ({NOT_SIGNIFICANT}); * marks the best. "
        f"The breakdown below is the best setting's.",
        "",
    ]
    lines += markdown_table(*sweep_table(sweep)) + ["", "![sweep](sweep.png)", ""]
    if sweep.kind == "advise":
        lines += [
            "### The findings, checked",
            "",
            "Gain per step against the run's own setting: predicted by the "
            "finding, measured here (median difference of the job's step times, 95% bootstrap CI).",
            "",
        ]
        lines += markdown_table(ADVICE_HEADERS, advice_rows(sweep)) + [""]
    if sweep.strategy != "ddp":
        return lines
    lines += ["### Buckets DDP built", "", "| setting | bucket sizes (bytes) |", "|---|---|"]
    lines += [f"| {s.label} | {', '.join(map(str, s.bucket_sizes))} |" for s in sweep.settings] + [""]
    best = next(s for s in sweep.settings if s.best)
    if best.timeline:
        lines += [
            f"### One backward pass of {best.label}",
            "",
            "Times in ms from the start of the backward pass on rank 0 (a typical profiled step).",
            "",
        ]
        lines += markdown_table(TIMELINE_HEADERS, [timeline_row(b) for b in best.timeline])
        lines += ["", "![bucket timeline](buckets.png)", ""]
    lines += [
        "### DDP's own measurements next to the trace's",
        "",
        "DDP's averages from `_get_ddp_logging_data()` over all steps, and the same figures taken from the "
        "profiled steps (median).",
        "",
    ]
    lines += markdown_table(DDP_CHECK_HEADERS, [ddp_check_row(s) for s in sweep.settings]) + [""]
    return lines
