"""report.html: one self-contained file (inline CSS, images as data URIs, no script, nothing fetched)."""

from __future__ import annotations

import base64
from html import escape

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

STYLE = """
body { font-family: system-ui, -apple-system, 'Segoe UI', sans-serif; margin: 2em auto; max-width: 1100px;
       color: #222; padding: 0 1em; }
.incomplete { background: #fde8e8; border-left: 4px solid #c0392b; padding: 0.5em 1em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ddd; }
.headline { font-size: 1.1em; background: #fff4e6; border-left: 4px solid #DD8452; padding: .6em 1em; }
table { border-collapse: collapse; margin: .6em 0; font-size: .9em; }
th, td { border: 1px solid #ddd; padding: .25em .6em; text-align: right; }
th { background: #f4f4f4; } td:first-child, th:first-child { text-align: left; }
img { max-width: 100%; border: 1px solid #eee; margin: .5em 0; }
code, pre { background: #f6f6f6; padding: .2em .4em; }
.meta { color: #666; font-size: .9em; } .note { color: #8a5a00; }
"""


def html_table(headers: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def html_image(images: dict[str, bytes], name: str, alt: str) -> str:
    if name not in images:
        return ""
    data = base64.b64encode(images[name]).decode("ascii")
    return f'<img alt="{escape(alt)}" src="data:image/png;base64,{data}">'


def page(title: str, body: list[str]) -> str:
    """A whole self-contained page: inline style, no script, nothing fetched."""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>{''.join(body)}</body></html>\n"
    )


def render_html(report: Report, images: dict[str, bytes]) -> str:
    parts = [f"<h1>commprof report: {escape(report.name)}</h1>"]
    run = report.run
    if run:
        parts.append(
            f'<p class="meta">{escape(str(run.model))} ({run.parameters or 0:,} parameters), '
            f"{run.world_size} ranks, {escape(run.backend)} on {escape(run.device)}"
            f" &middot; torch {escape(str(run.versions.get('torch')))}"
            f" &middot; created {escape(report.created)}</p>"
        )
    else:
        parts.append(
            f'<p class="meta">{len(report.sources)} trace file(s) &middot; created {escape(report.created)}</p>'
        )
    if report.incomplete:
        parts.append(f'<p class="incomplete">INCOMPLETE: {escape(report.incomplete)}</p>')
    if any(r.comm_ms for r in report.ranks):
        parts.append(f'<p class="headline">{escape(headline(report))}.</p>')
    if has_findings(report):
        parts.append(_findings(report))
    if report.sweep is not None:
        parts.append(_sweep(report, images))
    parts += [
        "<h2>Where the step goes</h2>",
        html_image(images, "breakdown.png", "breakdown per rank"),
        "<p>Milliseconds per profiled step (mean) and percent of the step; compute + exposed communication + "
        f"copies (memcpy/memset only) + idle = step. {escape(step_clock(report))}.</p>",
        html_table(BREAKDOWN_HEADERS, breakdown_rows(report)),
    ]
    parts += [f"<p>{escape(line)}.</p>" for line in breakdown_notes(report)]
    if report.timeline is not None:
        parts += ["<h2>One step on the timeline</h2>", html_image(images, "timeline.png", "step timeline")]
    if report.phases:
        parts += ["<h2>By phase</h2>", f"<p>{escape(PHASE_NOTE)}.</p>", html_table(PHASE_HEADERS, phase_rows(report))]
    if report.gathers:
        parts += [
            "<h2>FSDP all-gathers by module</h2>",
            f"<p>{escape(GATHER_NOTE)}.</p>",
            html_table(GATHER_HEADERS, gather_rows(report)),
        ]
    parts.append("<h2>Collectives</h2>")
    parts.append(
        html_table(COLLECTIVE_HEADERS, [collective_row(c) for c in report.collectives])
        if report.collectives
        else "<p>No collective ran in the profiled steps.</p>"
    )
    if report.cross_rank is not None:
        parts += [
            "<h2>Across ranks</h2>",
            html_table(SKEW_HEADERS, skew_rows(report.cross_rank)),
            f"<p>{escape(skew_summary(report))}</p>",
        ]
    notes = [f"skipped {s.path}: {s.reason}" for s in report.skipped] + list(report.warnings)
    if notes:
        parts += ["<h2>Notes</h2>", "<ul>" + "".join(f'<li class="note">{escape(n)}</li>' for n in notes) + "</ul>"]
    return page(f"commprof: {report.name}", parts)


def _sweep(report: Report, images: dict[str, bytes]) -> str:
    sweep = report.sweep
    assert sweep is not None, "only for a sweep's report"
    parts = [f"<h2>{escape(sweep.kind.capitalize())}</h2>", f'<p class="headline">{escape(sweep.recommendation)}</p>']
    if sweep.paste:
        parts.append(f"<pre>{escape(sweep.paste)}</pre>")
    parts += [
        html_image(images, "sweep.png", "step time against setting"),
        f"<p>Median step time of the job over interleaved rounds with 95% CI; speedup against "
        f"{escape(sweep.baseline)} ({NOT_SIGNIFICANT}); * best. The sections below are the best setting's.</p>",
        html_table(*sweep_table(sweep)),
        *(
            [
                "<h3>The findings, checked</h3><p>Gain per step against the run's own setting: predicted by the "
                "finding, measured here (95% CI).</p>",
                html_table(ADVICE_HEADERS, advice_rows(sweep)),
            ]
            if sweep.kind == "advise"
            else []
        ),
    ]
    if sweep.strategy != "ddp":
        return "".join(parts)
    parts += [
        "<h3>Buckets DDP built (bytes)</h3>",
        html_table(
            ("setting", "bucket sizes"), [(s.label, ", ".join(map(str, s.bucket_sizes))) for s in sweep.settings]
        ),
    ]
    best = next(s for s in sweep.settings if s.best)
    if best.timeline:
        parts += [
            f"<h3>One backward pass of {escape(best.label)}</h3>",
            html_image(images, "buckets.png", "bucket timeline"),
            html_table(TIMELINE_HEADERS, [timeline_row(b) for b in best.timeline]),
        ]
    parts += [
        "<h3>DDP's own measurements next to the trace's</h3>",
        html_table(DDP_CHECK_HEADERS, [ddp_check_row(s) for s in sweep.settings]),
    ]
    return "".join(parts)


def _findings(report: Report) -> str:
    lines = finding_lines(report)
    if not report.findings:
        return f"<h2>Findings</h2><p>{escape(lines[0][0])}.</p>"
    items = "".join(
        f"<li><b>{escape(title.split('. ', 1)[1])}</b><br>evidence: {escape(evidence)}<br>"
        f"do: <code>{escape(action)}</code></li>"
        for title, evidence, action in lines
    )
    return f"<h2>Findings</h2><ol>{items}</ol>"
