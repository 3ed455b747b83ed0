"""How each kind of job is written (kinds/ says what it is): its knobs as a refusal names them, what to do where
another kind's were given, the note of a launch that built none of it, the job as a script's launch built it, a
setting in the script's own terms (the line to paste: DDP(...), TrainingArguments(...), fully_shard(...), a
DeepSpeed config's entries, Horovod's environment), a tune's first round and a bucket layout."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from commprof.kinds import DDP, DEEPSPEED, FSDP, HOROVOD, JobKind, kind_of
from commprof.kinds.ddp_buckets import MB
from commprof.results.job import BuiltDDP, BuiltDeepSpeed, BuiltFSDP, BuiltHorovod
from commprof.results.run_record import RunRecord
from commprof.settings import (
    MIB,
    DDPOptions,
    DeepSpeedOptions,
    FSDPOptions,
    HorovodOptions,
    SettingOptions,
    elements,
    setting_label,
)

Layout = tuple[int, ...]
MAX_LISTED = 6  # bucket sizes named one by one


def describe(sizes: Sequence[int]) -> str:
    """'one bucket of 32.1 MiB', '2 buckets: 28.1, 4.0 MiB', or '64 buckets of 0.3 to 4.0 MiB' (MiB, as DDP counts its
    MB), with more decimals where one would read two different sizes alike ('1.01, 1.00 MiB')."""
    shown = _decimals(sizes)
    if len(sizes) == 1:
        return f"one bucket of {sizes[0] / MB:.{shown}f} MiB"
    if len(sizes) > MAX_LISTED:
        low, high = f"{min(sizes) / MB:.{shown}f}", f"{max(sizes) / MB:.{shown}f}"
        return f"{len(sizes)} buckets of {low if low == high else f'{low} to {high}'} MiB"
    return f"{len(sizes)} buckets: " + ", ".join(f"{s / MB:.{shown}f}" for s in sizes) + " MiB"


def _decimals(sizes: Sequence[int], most: int = 3) -> int:
    """The fewest decimals (one at least) at which different sizes read differently and none reads 0."""
    for decimals in range(1, most):
        texts = {size: f"{size / MB:.{decimals}f}" for size in set(sizes)}
        if len(set(texts.values())) == len(texts) and all(size == 0 or float(t) > 0 for size, t in texts.items()):
            return decimals
    return most


def cap_label(cap_mb: float | None) -> str:
    if cap_mb is None:
        return "DDP's default (no bucket_cap_mb: 1 MiB first bucket, then 25)"
    return f"bucket_cap_mb={cap_mb:g}"


class KindWords:
    """A kind's words; each kind's own below."""

    kind: JobKind
    knobs = ""  # its options, as a refusal names them
    instead = ""  # what to do where another kind's knobs were given for a job of this kind ({strategy}: theirs)
    unused = ""  # what a script's rank notes where --strategy named this kind and the script built none of it

    def trains_with(self, run: RunRecord) -> str:
        """The job as a script's launch built it: 'DeepSpeed (ZeRO stage 2)'."""
        return self.kind.engine

    def written(self, ran: Mapping[str, Any]) -> str:
        """A script's own setting as it ran (`ran`: a sweep's record of its options), in the script's terms."""
        return ", ".join(f"{name}={value}" for name, value in ran.items())

    def said(self, options: SettingOptions) -> str:
        """A built-in model's setting as its run's first line names it: 'FSDP reshard-after-forward-false'."""
        return f"{self.kind.short} {setting_label(options)}"

    def tried(self, settings: Sequence[SettingOptions]) -> str:
        """What tune's first round measures besides the script's own setting."""
        sizes = ", ".join(f"{self.kind.size(vars(s)):g}" for s in settings)
        return f"the script's own setting and {self.kind.size_knob} {sizes} {self.kind.size_unit},"

    def layout(self, run: RunRecord) -> Callable[[Layout], str]:
        """How a bucket layout of this job (kinds' layouts) is said."""
        return describe

    def paste(self, options: Any, framework: str = "script", baseline: Any = None) -> str:
        """What to write in the training script (or its config) for this setting, in the terms of whatever built
        the job (`framework`: script, transformers, lightning), what differs from `baseline`'s."""
        raise NotImplementedError


class DDPWords(KindWords):
    kind = DDP
    knobs = "DDP's options (bucket_cap_mb and the others)"
    instead = "leave out --strategy {strategy}"

    def written(self, ran: Mapping[str, Any]) -> str:
        cap, model = ran.get("bucket_cap_mb"), ran.get("ddp_model")
        whose = f"{model}'s DDP: " if model else ""
        if cap is None:
            return f"{whose}no bucket_cap_mb, so DDP's default: a 1 MiB first bucket, then 25 MiB"
        return f"{whose}bucket_cap_mb={cap:g} as the script passes it"

    def said(self, options: Any) -> str:
        return f"bucket_cap_mb={options.bucket_cap_mb:g}"

    def tried(self, settings: Sequence[SettingOptions]) -> str:
        caps = ", ".join(f"{self.kind.size(vars(s)):g}" for s in settings)
        return f"the script's own setting and caps {caps} MB, one per bucket layout,"

    def layout(self, run: RunRecord) -> Callable[[Layout], str]:
        names = [b.label for b in run.job.of(BuiltDDP)]
        if len(names) == 1:
            return describe
        return lambda each: "; ".join(f"{n}'s {describe(sizes)}" for n, sizes in zip(names, each, strict=True))  # type: ignore[arg-type]

    def paste(self, options: DDPOptions, framework: str = "script", baseline: Any = None) -> str:
        """In the terms of whatever built the DDP: the script's DDP(...), Trainer's TrainingArguments, Lightning's
        DDPStrategy."""
        args = [f"bucket_cap_mb={options.bucket_cap_mb:g}"] if options.bucket_cap_mb is not None else []
        if options.gradient_as_bucket_view:
            args.append("gradient_as_bucket_view=True")
        if options.static_graph:
            args.append("static_graph=True")
        hook = f"default_hooks.{options.comm_hook}_compress_hook" if options.comm_hook != "none" else None
        if framework == "transformers":  # Trainer passes only the cap through; the other knobs need a DDP of one's own
            cap = f"ddp_bucket_cap_mb={options.bucket_cap_mb:g}" if options.bucket_cap_mb is not None else ""
            line = f"TrainingArguments(..., {cap})" if cap else "TrainingArguments(...)"
            extra = args[1 if cap else 0 :] + ([f"comm hook {options.comm_hook}"] if hook else [])
            return line + (f"  # and {', '.join(extra)}: not settable through TrainingArguments" if extra else "")
        if framework == "lightning":
            return f"DDPStrategy({', '.join(args + ([f'ddp_comm_hook={hook}'] if hook else []))})"
        written, _, count = (options.ddp_model or "model").partition("#")  # m#2: the script's second DDP of m
        line = f"DDP({', '.join([written, *args])})"
        if hook:
            line += f"; ddp.register_comm_hook(None, {hook})"
        notes = [f"the DDP the report names {options.ddp_model}"] if count else []
        if options.grad_accum > 1:
            notes.append(f"and all-reduce every {options.grad_accum} micro-batches (no_sync for the others)")
        return line + (f"  # {'; '.join(notes)}" if notes else "")


class FSDPWords(KindWords):
    kind = FSDP
    knobs = "FSDP's options"
    instead = "give --strategy fsdp, whose knobs are FSDP's own"
    unused = "the script called no fully_shard: FSDP's options had no effect"

    def trains_with(self, run: RunRecord) -> str:
        built = run.job.of(BuiltFSDP)
        units = sum(len(b.units) for b in built)
        return f"FSDP2 (fully_shard, {units} units in {len(built)} model{'s' * (len(built) > 1)})"

    def written(self, ran: Mapping[str, Any]) -> str:
        reshard = ran.get("reshard_after_forward")
        return (
            f"reshard_after_forward={'FSDP default' if reshard is None else reshard}, "
            f"reduce dtype {ran.get('reduce_dtype', 'fp32')}, as the script passes them"
        )

    def paste(self, options: FSDPOptions, framework: str = "script", baseline: Any = None) -> str:
        """fully_shard's arguments (each block, then the model) and each block's prefetch set."""
        args = ["each block, then the model"] + (
            ["reshard_after_forward=False"] if options.reshard_after_forward is False else []
        )
        if options.reduce_dtype != "fp32":
            dtype = {"bf16": "bfloat16", "fp16": "float16"}[options.reduce_dtype]
            args.append(f"mp_policy=MixedPrecisionPolicy(reduce_dtype=torch.{dtype})")
        parts = [f"fully_shard({', '.join(args)})"]
        if options.forward_prefetch:
            parts.append(f"blocks[i].set_modules_to_forward_prefetch(blocks[i + 1:i + {options.forward_prefetch + 1}])")
        if options.backward_prefetch > 1:
            depth = options.backward_prefetch
            parts.append(f"blocks[i].set_modules_to_backward_prefetch(blocks[max(0, i - {depth}):i][::-1])")
        return "; ".join(parts)


class DeepSpeedWords(KindWords):
    kind = DEEPSPEED
    knobs = "ZeRO's options"
    unused = "the script built no DeepSpeed engine: the ZeRO options had no effect"
    instead = (
        "its gradients go in ZeRO's reduce buckets: commprof sweep --strategy deepspeed --reduce-bucket-size 5e7,2e8 "
        "-- SCRIPT, or commprof tune -- SCRIPT"
    )

    def trains_with(self, run: RunRecord) -> str:
        engine = run.job.first(BuiltDeepSpeed)
        return f"DeepSpeed (ZeRO stage {engine.zero_stage})" if engine else "DeepSpeed"

    def written(self, ran: Mapping[str, Any]) -> str:
        entries = DeepSpeedOptions(**ran).zero_config()
        said = ", ".join(f"{name} {_json_value(value)}" for name, value in entries.items())
        return f"zero_optimization {said or 'not recorded'}"

    def tried(self, settings: Sequence[SettingOptions]) -> str:
        sizes = ", ".join(elements(self.kind.size(vars(s))) for s in settings)
        return f"the script's own config and reduce_bucket_size {sizes} elements,"

    def layout(self, run: RunRecord) -> Callable[[Layout], str]:
        gradients = run.job.of(BuiltDeepSpeed)[0].parameters

        def described(built: Layout) -> str:
            if built[0] >= gradients:
                return f"one bucket of all {gradients:,} gradient elements"
            return f"{elements(built[0])}-element buckets"

        return described

    def paste(
        self, options: DeepSpeedOptions, framework: str = "script", baseline: DeepSpeedOptions | None = None
    ) -> str:
        """The "zero_optimization" entries to set in the script's DeepSpeed config (a dict or its JSON file), as JSON
        writes them: those in which the setting differs from `baseline` (the script's own config, as it ran)."""
        own = baseline.zero_config() if baseline is not None else {}
        entries = {name: value for name, value in options.zero_config().items() if own.get(name) != value}
        text = ", ".join(f'"{name}": {_json_value(value)}' for name, value in entries.items())
        return f'"zero_optimization": {{{text}}}  # in the config given to deepspeed.initialize; the rest as it is'


class HorovodWords(KindWords):
    kind = HOROVOD
    knobs = "Horovod's options"
    unused = "the script built no Horovod DistributedOptimizer: Horovod's options had no effect"
    instead = (
        "its gradients go in Horovod's fusion buffer: commprof sweep --strategy horovod --fusion-threshold-mb 8,32 "
        "-- SCRIPT, or commprof tune -- SCRIPT"
    )

    def trains_with(self, run: RunRecord) -> str:
        return "Horovod (hvd.DistributedOptimizer)"

    def written(self, ran: Mapping[str, Any]) -> str:
        return ", ".join(f"{name}={value}" for name, value in HorovodOptions(**ran).environment().items())

    def layout(self, run: RunRecord) -> Callable[[Layout], str]:
        gradients = sum(run.job.of(BuiltHorovod)[0].parameter_sizes)

        def described(layout: Layout) -> str:
            if layout[0] >= gradients:
                return f"one fusion buffer holds all {gradients / MIB:.2f} MiB of gradients"
            return f"fusion buffers of {layout[0] / MIB:g} MiB"

        return described

    def paste(self, options: HorovodOptions, framework: str = "script", baseline: HorovodOptions | None = None) -> str:
        """The variables to set where the job starts (before horovodrun), those that differ from `baseline`'s."""
        own = baseline.environment() if baseline is not None else {}
        given = {name: value for name, value in options.environment().items() if own.get(name) != value}
        return " ".join(f"{name}={value}" for name, value in given.items()) + " horovodrun ...  # or export them"


def _json_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return elements(value) if isinstance(value, int) and value >= 1e4 else str(value)


WORDS: dict[str, KindWords] = {w.kind.strategy: w for w in (DDPWords(), FSDPWords(), DeepSpeedWords(), HorovodWords())}


def words_of(kind: JobKind) -> KindWords:
    return WORDS[kind.strategy]


def paste(options: SettingOptions, framework: str = "script", baseline: SettingOptions | None = None) -> str:
    """The line to paste for a setting, in the terms of what built the job (its kind's words)."""
    return words_of(kind_of(options)).paste(options, framework, baseline)
