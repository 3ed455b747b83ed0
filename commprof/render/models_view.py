"""A script's DDP models in words: the header's list of them and the section of each one's own all-reduces
(analysis/models.py)."""

from __future__ import annotations

from commprof.kinds.ddp_buckets import cap_label, describe
from commprof.render.document import Section, Table, Text
from commprof.results.report import ModelAccount, Report
from commprof.values import human_bytes

MODEL_HEADERS = (
    "model",
    "module",
    "parameters",
    "built at",
    "bucket cap",
    "buckets",
    "calls/step",
    "ms/step",
    "bytes/step",
)
MODELS_NOTE = (
    "Each DistributedDataParallel the script built, by the module it passes to DDP; its all-reduces per profiled step "
    "are those whose size only its buckets have (DDP's buckets for its cap; ms: each call's whole duration)"
)


def models_named(report: Report) -> str:
    """'2 DDP models, generator (Sequential, 427,264 parameters) and discriminator (...)'; '' for one or none."""
    if len(report.models) < 2:
        return ""
    each = [f"{m.name} ({m.module}, {m.parameters:,} parameters)" for m in report.models]
    return f"{len(each)} DDP models, {', '.join(each[:-1])} and {each[-1]}"


def models_section(report: Report) -> list[Section]:
    if len(report.models) < 2:
        return []
    rows = [_row(model) for model in report.models]
    shared = report.models[0].shared_calls_per_step
    blocks: list = [
        Text(f"{MODELS_NOTE}."),
        Table(MODEL_HEADERS, rows, left=("model", "module", "built at", "buckets")),
    ]
    if shared:
        blocks.append(
            Text(
                f"{shared:.2f} all-reduces per step have a size that the buckets of more than one model have: "
                "counted to none of them."
            )
        )
    return [Section("DDP models", blocks)]


def _row(model: ModelAccount) -> tuple[str, ...]:
    cap = cap_label(model.bucket_cap_mb) + (" (commprof's)" if "bucket_cap_mb" in model.commprofs else "")
    return (
        model.name,
        model.module,
        f"{model.parameters:,}",
        model.built_at or "-",
        cap,
        describe(model.buckets),
        f"{model.calls_per_step:.2f}",
        f"{model.ms_per_step:.2f}",
        human_bytes(int(model.bytes_per_step)),
    )
