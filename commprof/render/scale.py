"""`commprof scale` output: tables (terminal and markdown), the speedup plot, a self-contained page."""

from __future__ import annotations

from commprof.kinds import KINDS
from commprof.render.document import Document, Figure, Section, Table, Text, notes_section
from commprof.render.finding_words import source_words
from commprof.render.job_text import backend_runs_as, busbw_header, kind_words, model_words
from commprof.results.finding_facts import LinkSource
from commprof.results.job import CollectiveBusbw
from commprof.results.scale import ScalePoint, ScaleReport

MEASURED_HEADERS = (
    "ranks",
    "global batch",
    "LR (linear rule)",
    "step ms [95% CI]",
    "samples/s",
    "speedup",
    "efficiency",
    "compute ms",
    "exposed comm ms",
    "idle ms",
    # then a busbw column per collective the job ran (collectives), and "model ms" where the step was modelled
)
MODEL_HEADER = "model ms"
PREDICTED_HEADERS = (
    "ranks",
    "global batch",
    "LR (linear rule)",
    "step ms",
    "samples/s",
    "speedup",
    "efficiency",
    "exposed comm ms",
    "best bucket_cap_mb",
    "step ms at best",
)


UNKNOWN_BATCH_RATE = "rank-steps/s"  # a script's throughput where its batch is not known: samples/s over it


def headers(report: ScaleReport, names: tuple[str, ...]) -> tuple[str, ...]:
    """The columns, the throughput in rank-steps/s where a script's batch is not known."""
    return tuple(UNKNOWN_BATCH_RATE if n == "samples/s" and not report.batch_known else n for n in names)


def measured_headers(report: ScaleReport) -> tuple[str, ...]:
    """The measured table's columns: a busbw column for each collective the job ran, by what it ran it as (a DDP
    job's all-reduce, FSDP's all-gather and reduce-scatter), and the model's step where the step was modelled."""
    modelled = (MODEL_HEADER,) if any(p.predicted_step_ms is not None for p in report.points) else ()
    return headers(report, (*MEASURED_HEADERS, *(busbw_header(c) for c in collectives(report)), *modelled))


def point_busbw(point: ScalePoint) -> list[CollectiveBusbw]:
    """Each collective's busbw at a size; a report from before they were kept by collective: its all-reduce's."""
    if point.busbw or point.allreduce_busbw_gbps is None:
        return point.busbw
    return [CollectiveBusbw("all_reduce", "all_reduce", 0, point.allreduce_busbw_gbps)]


def collectives(report: ScaleReport) -> list[str]:
    """The collectives the job ran at any size, in order of first appearance."""
    return list(dict.fromkeys(b.collective for p in report.points for b in point_busbw(p)))


def _batch_and_lr(report: ScaleReport, global_batch: int, learning_rate: float) -> tuple[str, str]:
    """The global batch ('-' where a script's is not known) and the linear rule's LR ('-' for a script, which sets
    its own)."""
    batch = str(global_batch) if report.batch_known else "-"
    return batch, "-" if report.script else f"{learning_rate:.4g}"


def measured_rows(report: ScaleReport) -> list[tuple[str, ...]]:
    ran, modelled = collectives(report), any(p.predicted_step_ms is not None for p in report.points)
    return [
        (
            p.ranks,
            *_batch_and_lr(report, p.global_batch, p.learning_rate),
            f"{p.step_ms.value:.1f} [{p.step_ms.low:.1f}, {p.step_ms.high:.1f}]",
            f"{p.samples_per_s:.1f}",
            f"{p.speedup:.2f}x",
            f"{p.efficiency:.0%}",
            f"{p.compute_ms:.1f}",
            f"{p.exposed_comm_ms:.1f}",
            f"{p.idle_ms:.1f}",
            *_busbw_cells(p, ran),
            *((f"{p.predicted_step_ms:.1f}" if p.predicted_step_ms is not None else "-",) if modelled else ()),
        )
        for p in report.points
    ]


def _busbw_cells(point: ScalePoint, ran: list[str]) -> list[str]:
    at = {b.collective: b.busbw_gbps for b in point_busbw(point)}
    return [f"{at[c]:.2f}" if c in at else "-" for c in ran]


def predicted_rows(report: ScaleReport) -> list[tuple[str, ...]]:
    return [
        (
            str(p.world_size),
            *_batch_and_lr(report, p.global_batch, p.learning_rate),
            f"{p.step_ms:.1f}",
            f"{p.samples_per_s:.1f}",
            f"{p.speedup:.2f}x",
            f"{p.efficiency:.0%}",
            f"{p.exposed_comm_ms:.1f}",
            f"{p.best_bucket_cap_mb:g}",
            f"{p.best_step_ms:.1f}",
        )
        for p in report.predictions
    ]


def trained(report: ScaleReport) -> str:
    """What scaled, in its kind's words: 'train.py, its model Net (265,738 parameters) under FSDP (fully_shard):
    reshard_after_forward=...', or 'mlp (12,345 parameters) under DistributedDataParallel, bucket_cap_mb=25'."""
    model = model_words(report.model, report.parameters)
    kind = kind_words(report.strategy, report.settings, report.bucket_cap_mb)
    if report.script:
        return f"{' '.join(report.script)}, {model if report.model is None else f'its model {model}'}, under {kind}"
    return f"{model} under {kind}"


def model_notes(report: ScaleReport) -> list[str]:
    notes = [
        f"{report.mode} scaling of {trained(report)}; {report.backend} on {report.device}; "
        + (
            "the script sets its own learning rate (scale it with the global batch, e.g. the linear rule of Goyal "
            "et al., with gradual warm-up)."
            if report.script
            else f"LR: linear scaling rule (Goyal et al.) from {report.base_learning_rate:g} at the smallest size's "
            "global batch (use with gradual warm-up)."
        ),
        f"Sizes ran interleaved in this order: {', '.join(map(str, report.order))}; step times are the slowest "
        "rank's, outside the profiler window: each run's median, their geometric mean over a size's runs with the "
        "95% interval over those runs (the spread between launches; a size run once: its steps' median and "
        "distribution-free interval).",
    ]
    if report.script and report.batch_argument:
        notes.append(
            f"Batch per rank: the script's {report.batch_argument}"
            + (", divided among the ranks at each size (strong scaling)." if report.mode == "strong" else ".")
        )
    elif report.script:
        notes.append(
            f"The script's batch per rank is not known to commprof ({report.mode} scaling keeps it as written): "
            f"throughput is in {UNKNOWN_BATCH_RATE}, optimizer steps of every rank per second, which is samples/s "
            "over that batch; --batch-argument NAME (its argument that holds it) gives samples/s."
        )
    if report.link:
        compute = report.compute
        assert compute is not None, "the link model and the compute fit are set together"
        notes.append(
            f"Prediction (docs/prediction.md): ring all-reduce with alpha {report.link['alpha_us']:.1f} us "
            f"per step and B {report.link['bandwidth_gbps']:.3f} GB/s ({_source(report.link['source'])}); compute per "
            f"rank {compute['intercept_ms']:.1f} + {compute['slope_ms']:.2f}·n ms; trace-to-wall "
            f"factor {report.profiling_overhead:.3f} (unprofiled wall-clock step / traced step: the "
            "profiler's cost, and on GPUs the CPU time outside the device's busy span)."
        )
    elif report.strategy is not None and not KINDS[report.strategy].modelled:
        notes.append(
            "No model of the step (docs/prediction.md): commprof's is DDP's, gradient buckets all-reduced on a ring; "
            f"{KINDS[report.strategy].title}'s collectives are not modelled, so its step is not predicted."
        )
    notes += backend_runs_as([b for p in report.points for b in point_busbw(p)], report.backend)
    return notes


def document(report: ScaleReport) -> Document:
    sections = [
        Section("", [Text(f"{summary(report)}.", "headline"), Figure("scale.png", "speedup against world size")]),
        Section("Measured", [Table(measured_headers(report), measured_rows(report))]),
        *(
            [Section("Predicted", [Table(headers(report, PREDICTED_HEADERS), predicted_rows(report))])]
            if report.predictions
            else []
        ),
        *notes_section(
            [*model_notes(report), "Each size's full report: reports/<run id>-ws<N>-r<K>/."],
        ),
    ]
    return Document(f"commprof scale: {report.name}", sections)


def images(report: ScaleReport) -> dict[str, bytes]:
    return {"scale.png": scale_plot(report)}


def scale_plot(report: ScaleReport) -> bytes:
    """Speedup against world size, with the ideal line (and predictions dashed), like the mLSTM seed's figure."""
    from commprof.render.plots import legend_beside, png_bytes, subplots

    fig, ax = subplots((7, 4.5))
    base = report.points[0].world_size
    measured = [(p.world_size, p.speedup) for p in report.points]
    predicted = [(p.world_size, p.speedup) for p in report.predictions]
    every = sorted({n for n, _ in measured + predicted})
    ax.plot(every, [n / base for n in every], color="#999999", linestyle=":", label="ideal (linear)")
    ax.plot(*zip(*measured, strict=False), marker="o", color="#4C72B0", label="measured")
    if predicted:
        ax.plot(
            *zip(*([measured[-1]] + predicted), strict=False),
            marker="s",
            linestyle="--",
            color="#DD8452",
            label="predicted",
        )
    ax.set_xlabel("world size (ranks)")
    rate = "samples/s" if report.batch_known else UNKNOWN_BATCH_RATE
    ax.set_ylabel(f"speedup ({rate} against {base} rank{'s' if base > 1 else ''})")
    what = report.model or (report.script[0] if report.script else "its model")
    ax.set_title(f"{report.mode} scaling: {what}, {report.backend} on {report.device}")
    if every[-1] / every[0] >= 8:
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
    ax.grid(alpha=0.3)
    legend_beside(ax)
    fig.tight_layout()
    return png_bytes(fig)


def _source(source: str | dict) -> str:
    """The link's source as a scale report holds it: its facts (an older report: its words)."""
    return source if isinstance(source, str) else source_words(LinkSource(**source))


def summary(report: ScaleReport) -> str:
    """The scale's headline: its speedup and efficiency at the largest size measured, and at the largest predicted."""
    last = report.points[-1]
    text = (
        f"{report.mode} scaling {report.points[0].world_size} -> {last.world_size} ranks"
        + (f" ({report.points[0].nodes} -> {last.nodes} nodes)" if last.nodes > 1 else "")
        + ": "
        f"{last.speedup:.2f}x speedup, {last.efficiency:.0%} efficiency; communication exposed "
        f"{last.exposed_comm_ms:.1f} ms of {last.step_ms.value:.1f} ms per step at {last.world_size}"
    )
    if report.predictions:
        p = report.predictions[-1]
        text += (
            f"; predicted at {p.world_size}: {p.efficiency:.0%} efficiency, best bucket_cap_mb={p.best_bucket_cap_mb:g}"
        )
    return text
