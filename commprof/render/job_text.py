"""A job in its own kind's words (results/job.py's facts): what it trained and with which of its kind's settings,
and its collectives by what it ran them as. DDP speaks of bucket_cap_mb and all-reduces, FSDP of resharding,
prefetch, its reduce dtype, all-gathers and reduce-scatters, ZeRO of its zero_optimization config, Horovod of its
fusion buffer; none borrows another's."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from commprof.kinds import DDP, DEEPSPEED, FSDP, HOROVOD, KINDS, JobKind
from commprof.render.kind_words import words_of
from commprof.results.job import CollectiveBusbw, Job
from commprof.settings import DDPOptions, DeepSpeedOptions

FSDP_OPTIONS = ("reshard_after_forward", "forward_prefetch", "backward_prefetch", "reduce_dtype")
DDP_SHOWN = ("comm_hook", "grad_accum", "static_graph", "gradient_as_bucket_view", "find_unused_parameters")
NONE_SEEN = "a job of its own collectives (commprof saw it build no DDP, fully_shard, DeepSpeed engine or Horovod)"


def collective(name: str) -> str:
    """all_gather -> all-gather."""
    return name.replace("_", "-")


def busbw_header(name: str) -> str:
    return f"{collective(name)} busbw GB/s"


def model_words(model: str | None, parameters: int | None) -> str:
    """'GPT (124,439,808 parameters)', 'Net (parameter count not known)', or that neither was recorded."""
    count = f"{parameters:,} parameters" if parameters else "parameter count not known"
    if model is None:
        return f"its model not recorded ({count})"
    return f"{model} ({count})"


def kind_words(strategy: str | None, settings: Mapping[str, Any] | None, bucket_cap_mb: float | None = None) -> str:
    """The kind of job and its own settings as the job ran with them: 'FSDP (fully_shard): reshard_after_forward=True,
    forward_prefetch=0, backward_prefetch=1, reduce_dtype=fp32'; a script's own where not recorded says so.
    `bucket_cap_mb`: DDP's cap as its DDP got it (None: DDP's default)."""
    if strategy is None:
        return NONE_SEEN
    kind = KINDS[strategy]
    if kind.reads_ddp:  # DDP's cap is known even where its other options were not recorded
        return _ddp_words(settings, bucket_cap_mb)
    if settings is None:
        return f"{kind.engine}, {_NOT_RECORDED[strategy]}"
    return _WORDS[strategy](settings)


def _ddp_words(settings: Mapping[str, Any] | None, bucket_cap_mb: float | None) -> str:
    cap = "DDP's default" if bucket_cap_mb is None else f"{bucket_cap_mb:g}"
    defaults = DDPOptions()
    extra = [
        f"{name}={settings[name]}"
        for name in DDP_SHOWN
        if settings and name in settings and settings[name] != getattr(defaults, name)
    ]
    return ", ".join([f"{DDP.title}, bucket_cap_mb={cap}", *extra])


def _fsdp_words(settings: Mapping[str, Any]) -> str:
    shown = {name: settings[name] for name in FSDP_OPTIONS if name in settings}
    if shown.get("reshard_after_forward", True) is None:
        shown["reshard_after_forward"] = "FSDP's default (True)"
    return f"{FSDP.engine}: " + ", ".join(f"{name}={value}" for name, value in shown.items())


def _zero_words(settings: Mapping[str, Any]) -> str:
    given = {name: settings.get(name) for name in DEEPSPEED_FIELDS}
    return f"{DEEPSPEED.title} ZeRO, {words_of(DEEPSPEED).written(given)}"


def _horovod_words(settings: Mapping[str, Any]) -> str:
    return (
        f"{HOROVOD.engine}, fusion buffer {settings['fusion_threshold_mb']:g} MiB (HOROVOD_FUSION_THRESHOLD), "
        f"cycle {settings['cycle_time_ms']:g} ms (HOROVOD_CYCLE_TIME)"
    )


# each kind's settings in words, by its strategy; and what is said where a script's own were not recorded
_WORDS: dict[str, Callable[[Mapping[str, Any]], str]] = {
    FSDP.strategy: _fsdp_words,
    DEEPSPEED.strategy: _zero_words,
    HOROVOD.strategy: _horovod_words,
}
_NOT_RECORDED = {
    FSDP.strategy: "its reshard_after_forward, prefetch and reduce dtype as the script passes them (not recorded)",
    DEEPSPEED.strategy: "its zero_optimization config as the script gives it (not recorded)",
    HOROVOD.strategy: "its fusion buffer and cycle as the job's environment sets them (not recorded)",
}


DEEPSPEED_FIELDS = tuple(DeepSpeedOptions.__dataclass_fields__)


def backend_runs_as(busbw: Iterable[CollectiveBusbw], backend: str) -> list[str]:
    """Where the backend ran a collective as another op (Gloo: FSDP's reduce-scatter as an all-reduce of the whole
    gradient buffer), one sentence each: its busbw is that op's."""
    seen = sorted({(b.collective, b.op) for b in busbw if b.collective != b.op})
    return [
        f"{backend} runs the job's {collective(ran)} as {_an(collective(op))} of the whole buffer: its busbw counts "
        f"{_an(collective(op))}'s traffic."
        for ran, op in seen
    ]


def _an(noun: str) -> str:
    return f"{'an' if noun[0] in 'aeiou' else 'a'} {noun}"


def busbw_by_size(busbw: Iterable[CollectiveBusbw]) -> str:
    """'all-gather 0.1 MiB: 0.03, 2.0 MiB: 0.41; reduce-scatter 0.3 MiB: 0.09', by collective in order of first
    appearance."""
    by: dict[str, list[CollectiveBusbw]] = {}
    for b in busbw:
        by.setdefault(b.collective, []).append(b)
    return "; ".join(
        f"{collective(name)} " + ", ".join(f"{size(b.bytes)}: {b.busbw_gbps:.2f}" for b in sizes)
        for name, sizes in by.items()
    )


def size(n: int) -> str:
    """'28.1 MiB', '128.5 KiB', '512 B': one decimal, in the largest unit it reaches."""
    if n >= 2**20:
        return f"{n / 2**20:.1f} MiB"
    return f"{n / 1024:.1f} KiB" if n >= 1024 else f"{n} B"


def models_text(names: list[str], target: str | None) -> str:
    """What a setting is set on, in a script with several DDP models (`names`): every one at once, or `target`."""
    if target is None:
        return (
            f"the script builds {len(names)} DDP models ({', '.join(names)}): each setting is set on every one at "
            "once (--ddp-model NAME sets one alone)"
        )
    others = ", ".join(n for n in names if n != target)
    return (
        f"the script builds {len(names)} DDP model{'s' * (len(names) > 1)}: each setting is set on {target} alone"
        + (f" ({others} as written)" if others else "")
    )


def kinds_text(job: Job, kind: JobKind) -> str:
    """What the settings of `kind` vary in a job of several kinds: its knobs on its models, the others' as written."""
    built = ", ".join(f"{b.label} ({KINDS[b.kind].short})" for b in job.built)
    own = [b.label for b in job.built if b.kind == kind.strategy]
    others = [k for k in job.kinds if k != kind.strategy]
    kept = "; ".join(f"{words_of(KINDS[k]).knobs} as written (--strategy {k} varies them)" for k in others)
    knobs = words_of(kind).knobs
    return f"the script builds models of {len(job.kinds)} kinds, {built}: these settings vary {knobs} on " + (
        f"{', '.join(own)}; {kept}"
    )
