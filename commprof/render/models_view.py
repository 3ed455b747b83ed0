"""A script's models in words (each DDP, each FSDP root): the header's list of them and the section of each one's own
collectives (analysis/models.py)."""

from __future__ import annotations

from commprof.render.document import Section, Table, Text
from commprof.render.kind_words import cap_label, describe
from commprof.results.report import ModelAccount, Report
from commprof.values import human_bytes

MODEL_HEADERS = (
    "model",
    "kind",
    "module",
    "parameters",
    "built at",
    "settings",
    "buckets or units",
    "calls/step",
    "ms/step",
    "bytes/step",
)
MODELS_NOTE = (
    "Each model the script built, by the module it passes to DDP or to fully_shard (an FSDP model by its root); its "
    "collectives per profiled step are those whose size only its buckets or units have (DDP: its buckets' all-reduces; "
    "FSDP: its units' parameter all-gathers and gradient reduce-scatters; ms: each call's whole duration)"
)


def models_named(report: Report) -> str:
    """'2 DDP models, generator (Sequential, 427,264 parameters) and discriminator (...)'; '' for one or none."""
    if len(report.models) < 2:
        return ""
    each = [f"{m.name} ({m.module}, {m.parameters:,} parameters)" for m in report.models]
    kinds = " and ".join(sorted({m.kind for m in report.models}))
    return f"{len(each)} {kinds} models, {', '.join(each[:-1])} and {each[-1]}"


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
                f"{shared:.2f} collectives per step have a size that the buckets or units of more than one model have: "
                "counted to none of them."
            )
        )
    return [Section("Models", blocks)]


def _row(model: ModelAccount) -> tuple[str, ...]:
    return (
        model.name,
        model.kind,
        model.module,
        f"{model.parameters:,}",
        model.built_at or "-",
        _settings(model),
        describe(model.buckets) if model.kind == "DDP" else f"{len(model.units)} units" if model.units else "-",
        *(
            (f"{model.calls_per_step:.2f}", f"{model.ms_per_step:.2f}", human_bytes(int(model.bytes_per_step)))
            if model.told_apart
            else ("not told apart",) * 3
        ),
    )


def _settings(model: ModelAccount) -> str:
    if model.kind == "ZeRO":
        return ", ".join(f"{name}={value}" for name, value in model.zero.items())
    if model.kind == "DDP":
        return cap_label(model.bucket_cap_mb) + (" (commprof's)" if "bucket_cap_mb" in model.commprofs else "")
    shown = []
    order = ("reshard_after_forward", "forward_prefetch", "backward_prefetch", "reduce_dtype")
    for name, value in sorted(model.fsdp.items(), key=lambda item: order.index(item[0]) if item[0] in order else 9):
        if name == "reshard_after_forward" and value is None:
            value = "FSDP's default"
        shown.append(f"{name}={value}" + (" (commprof's)" if name in model.commprofs else ""))
    return ", ".join(shown)
