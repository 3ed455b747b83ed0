"""A run's, an analysis's, a sweep's, a tune's or an advise's report as one document (render/document.py)."""

from __future__ import annotations

from commprof.kinds import KINDS
from commprof.render.compiled_text import compiled_line, model_name
from commprof.render.document import Block, Document, Figure, Section, Table, Text, notes_section
from commprof.render.findings_text import ADVICE_HEADERS, advice_rows, finding_lines, has_findings
from commprof.render.groups_view import DIMENSION_HEADERS, dimension_rows, pipeline_text
from commprof.render.models_view import models_named, models_section
from commprof.render.network_view import link_bound_headline, network_sections
from commprof.render.notes_text import incomplete_text, notes
from commprof.render.skew_text import SKEW_HEADERS, skew_rows, skew_summary
from commprof.render.tables import (
    BREAKDOWN_HEADERS,
    BREAKDOWN_SUM,
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
    many_ranks,
    phase_rows,
    step_clock,
    step_named,
    sweep_table,
    timeline_row,
    without_empty_columns,
)
from commprof.render.verdict_words import verdict_words
from commprof.render.whole_run_view import whole_run_sections
from commprof.results.job import BuiltDDP
from commprof.results.report import Report, ShortWindow
from commprof.trace.rules import ZERO_REDUNDANCY


def document(report: Report) -> Document:
    sections = [
        _about(report),
        *_findings(report),
        *_sweep(report),
        _breakdown(report),
        *models_section(report),
        *_phases(report),
        *whole_run_sections(report),  # after the profiled window's breakdown: was it typical of the run?
        *_dimensions(report),
        _collectives(report),
        *network_sections(report),
        *_across_ranks(report),
        *notes_section(notes(report)),
    ]
    return Document(f"commprof report: {report.name}", sections)


def images(report: Report) -> dict[str, bytes]:
    """The report's figures (matplotlib imported only here: it costs a third of a second)."""
    from commprof.render.plots import figures

    return figures(report)


def _about(report: Report) -> Section:
    run = report.run
    if run:
        hosts = f"; hosts: {', '.join(run.hosts)}" if run.hosts else ""
        several = models_named(report)
        model = (
            f"{several}; "
            if several
            else f"{model_name(run.model, run.parameters, run.compiled)}, "
            if run.model
            else ""
        )
        about = (
            f"{model}{run.world_size} ranks, {run.backend} on "
            f"{run.device}{hosts}; torch {run.versions.get('torch')}; created {report.created}"
        )
    else:
        about = f"{len(report.ranks)} rank(s) from {len(report.sources)} trace file(s); created {report.created}"
    blocks = [Text(about, "meta")]
    shown = run.settings(with_defaults=False) if run and report.sweep is None else {}  # a sweep's table shows its own
    if shown:
        blocks.append(Text("settings: " + ", ".join(f"{k}={v}" for k, v in shown.items()), "meta"))
    if run and run.compiled:
        blocks.append(Text(compiled_line(run.compiled, report.whole_run, run.job.first(BuiltDDP) is not None), "meta"))
    incomplete = incomplete_text(report)
    if incomplete:
        blocks.append(Text(f"INCOMPLETE: {incomplete}", "alert"))
    if run and (run.optimizer or "").endswith(ZERO_REDUNDANCY):
        blocks.append(Text(zero_redundancy_text(run.world_size), "meta"))
    if run and run.joined_steps:
        blocks.append(Text(joined_text(run.joined_steps, run.steps_completed), "meta"))
    if report.short_window is not None:
        blocks.append(Text(short_window_text(report.short_window), "meta"))
    communicates = any(r.comm_ms for r in report.ranks)
    blocks.append(Text(f"{headline(report)}." if communicates else f"{silent_headline(report)}."))
    if communicates:
        blocks[-1] = Text(blocks[-1].text, "headline")
    bound = link_bound_headline(report)
    if bound:
        blocks.append(Text(f"{bound}.", "headline"))
    return Section("", blocks)


def _findings(report: Report) -> list[Section]:
    if not has_findings(report):
        return []
    blocks: list[Block] = []
    for title, evidence, action in finding_lines(report):
        if not action:
            blocks.append(Text(f"{title}."))
            continue
        blocks += [Text(title, "strong"), Text(f"evidence: {evidence}", "item"), Text(action, "action")]
    return [Section("Findings", blocks)]


def _sweep(report: Report) -> list[Section]:
    sweep = report.sweep
    if sweep is None:
        return []
    counted = "gathers = FSDP parameter all-gathers" if KINDS[sweep.strategy].gathers else "AR = all-reduces per step"
    recommendation, paste = verdict_words(sweep)
    blocks: list[Block] = [Text(recommendation, "headline")]
    if paste:
        blocks.append(Text(paste, "code"))
    by_launch = any(s.launches for s in sweep.settings)
    step = (
        "each launch's median, their geometric mean over the setting's launches in ms, with its 95% interval over "
        f"launches; speedup against {sweep.baseline}, launch by launch in the rounds both ran in"
        if by_launch
        else f"median of interleaved repeats in ms, with its 95% interval; speedup against {sweep.baseline}"
    )
    blocks += [
        Text(
            f"The job's step time (slowest rank per step), {step}; * marks the best, {NOT_SIGNIFICANT}; exposed "
            f"communication in ms; {counted}. The breakdown below is the best setting's, {sweep.best}."
        ),
        Figure("sweep.png", "step time against setting"),
        Table(*sweep_table(sweep), left=("setting",)),
    ]
    sections = [Section(sweep.kind.capitalize(), blocks)]
    if sweep.kind == "advise":
        checked = Table(ADVICE_HEADERS, advice_rows(sweep), left=("setting", "verdict"))
        measured = (
            "the mean over paired launches of the difference of their medians"
            if by_launch
            else "median difference of the job's step times"
        )
        about = (
            f"Gain per step against the run's own setting, in ms: predicted by the finding, measured here ({measured}, "
            "with its 95% interval; the prediction's interval is the one a rerun falls in)."
        )
        sections.append(Section("The findings, checked", [Text(about), checked], level=3))
    if not KINDS[sweep.strategy].reads_ddp:
        return sections
    built = Table(
        ("setting", "bucket sizes (bytes)"),
        [(s.label, ", ".join(map(str, s.bucket_sizes))) for s in sweep.settings],
        left=("setting", "bucket sizes (bytes)"),
    )
    sections.append(Section("Buckets DDP built", [built], level=3))
    best = next(s for s in sweep.settings if s.best)
    if best.timeline:
        timeline: list[Block] = [
            Text("Times in ms from the start of the backward pass on rank 0 (a typical profiled step)."),
            Figure("buckets.png", "bucket timeline"),
            Table(TIMELINE_HEADERS, [timeline_row(b) for b in best.timeline]),
        ]
        sections.append(Section(f"One backward pass of {best.label}", timeline, level=3))
    ddp_check: list[Block] = [
        Text(
            "DDP's averages from _get_ddp_logging_data() over all steps, and the same figures taken from the "
            "profiled steps (median)."
        ),
        Table(DDP_CHECK_HEADERS, [ddp_check_row(s) for s in sweep.settings], left=("setting",)),
    ]
    sections.append(Section("DDP's own measurements next to the trace's", ddp_check, level=3))
    return sections


def _breakdown(report: Report) -> Section:
    per = "quantiles over ranks, then the slowest ranks" if many_ranks(report) else "per rank"
    launch = f" of {report.sweep.best}'s profiled launch" if report.sweep is not None else ""
    blocks: list[Block] = [
        Text(
            f"Milliseconds per profiled step{launch}, {per}, and percent of the mean step; {BREAKDOWN_SUM}; the "
            f"median and p95 step beside the mean; all ranks in report.json. {step_clock(report)}."
        ),
        Table(BREAKDOWN_HEADERS, breakdown_rows(report), left=("rank",)),
        *(Text(f"{line}.") for line in breakdown_notes(report)),
        Figure("breakdown.png", "breakdown per rank"),
    ]
    if report.timeline is not None:
        blocks += [
            Text(
                f"One step of rank {report.timeline.rank}, {step_named(report, report.timeline.step)}, a step of "
                "median length:"
            ),
            Figure("timeline.png", "step timeline"),
        ]
    return Section("Where the step goes", blocks)


def _phases(report: Report) -> list[Section]:
    sections = []
    if report.phases:
        table = Table(PHASE_HEADERS, phase_rows(report), left=("phase",))
        sections.append(Section("By phase", [Text(f"{PHASE_NOTE}."), table]))
    if report.gathers:
        table = Table(GATHER_HEADERS, gather_rows(report), left=("module", "phase"))
        sections.append(Section("FSDP all-gathers by module", [Text(f"{GATHER_NOTE}."), table]))
    return sections


def zero_redundancy_text(world_size: int) -> str:
    return (
        f"torch's ZeroRedundancyOptimizer shards the optimizer's state over the {world_size} ranks: each rank steps "
        "its own part of the parameters and broadcasts it to the others (the broadcasts in its step)"
    )


def joined_text(joined: dict[str, int], steps: int | None) -> str:
    """'uneven inputs under Join: rank 0 ran 30 of the 40 steps on its own inputs, then shadowed the others' last
    10'."""
    said = [
        f"rank {rank} ran {(steps or 0) - n} of the {steps} steps on its own inputs, then shadowed the others' last {n}"
        if steps
        else f"rank {rank} shadowed the others' last {n} steps"
        for rank, n in sorted(joined.items(), key=lambda item: int(item[0]))
    ]
    return f"uneven inputs under Join: {'; '.join(said)}"


def short_window_text(short: ShortWindow) -> str:
    """'the script ended at step 10: the report covers 3 of the 10 profiled steps asked for (steps 8-10); --schedule
    3,1,5 profiles steps 5-9 inside it'."""
    wait, warmup, active = short.fits
    covered = short.last_step - short.first_step + 1
    return (
        f"the script ended at step {short.last_step}: the report covers {covered} of the {short.asked} profiled "
        f"steps asked for (steps {short.first_step}-{short.last_step}); --schedule {wait},{warmup},{active} profiles "
        f"steps {wait + warmup + 1}-{wait + warmup + active} inside it"
    )


def silent_headline(report: Report) -> str:
    """A report whose profiled steps held no collective; where the script built nothing data-parallel, why."""
    run = report.run
    if run is None or run.job.kinds or run.world_size < 2 or not run.config.script:
        return "No communication in the profiled steps"
    return (
        "No communication in the profiled steps: the script built no DistributedDataParallel, FSDP, ZeRO engine or "
        f"Horovod optimizer, so each of its {run.world_size} ranks trained alone"
    )


def _dimensions(report: Report) -> list[Section]:
    if not report.dimensions:
        return []
    about = Text(
        "Per profiled step, the mean over ranks: each dimension of the device mesh (or process group) with the time "
        "one of its collectives was in flight (comm) and, of that, the time no computation ran beside it (exposed); "
        "groups: each of its process groups' ranks. Most exposed first."
    )
    table = Table(DIMENSION_HEADERS, dimension_rows(report), left=("dimension", "groups"))
    stages = [Text(pipeline_text(report))] if report.pipeline else []
    return [Section("By dimension", [about, table, *stages])]


def _collectives(report: Report) -> Section:
    if not report.collectives:
        return Section("Collectives", [Text("No collective ran in the profiled steps.")])
    headers, rows = without_empty_columns(
        COLLECTIVE_HEADERS, [collective_row(c, bool(report.dimensions)) for c in report.collectives]
    )
    table = Table(headers, rows, left=("phase", "op", "for", "backend", "dtype"), key=2)
    caption = (
        "In the profiled steps; ms: one call's mean time; hidden: the share of its time with computation running "
        "beside it on the same rank; algbw and busbw in GB/s. Calls in flight at once (Gloo and "
        "NCCL run buckets side by side) each count their own time here, so calls x ms can add up to more than the "
        "breakdown's comm, which counts the time with any collective in flight once."
    )
    return Section("Collectives", [Text(caption), table])


def _across_ranks(report: Report) -> list[Section]:
    if report.cross_rank is None:
        return []
    about = Text(
        "Per step. Wait: arrived early and waited for the last rank; transfer: from the last rank's arrival to the "
        "end; makes others wait: what its late arrivals cost the others."
    )
    table = Table(SKEW_HEADERS, skew_rows(report.cross_rank), left=())
    return [Section("Across ranks", [about, table, Text(skew_summary(report))])]
