"""The settings commprof applies to what a run trains with, and which sweep, tune and advise compare: DDP's
(`DDPOptions`), FSDP's (`FSDPOptions`) and DeepSpeed ZeRO's (`DeepSpeedOptions`), each option declared once with its
default, help and validation, and each setting's folder-safe label."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, ClassVar

from commprof.fields import option, require

COMM_HOOKS = ("none", "fp16", "bf16")
REDUCE_DTYPES = ("fp32", "bf16", "fp16")
ZERO_STAGES = (0, 1, 2, 3)
# ZeRO reduce_bucket_sizes tried by default (sweep, tune, the findings): DeepSpeed's default, 5e8 elements, and a
# decade apart below it
ZERO_BUCKET_GRID = (5e5, 5e6, 5e7, 5e8)
DDP_BUCKET_GRID_MB = (1.0, 5.0, 25.0, 100.0)  # bucket_cap_mbs tune tries first, a coarse log grid
STRATEGIES = ("ddp", "fsdp", "deepspeed", "horovod")
# Horovod's fusion thresholds tune tries first, in MiB: 128 is Horovod's default (HOROVOD_FUSION_THRESHOLD)
HOROVOD_FUSION_GRID_MB = (1.0, 8.0, 32.0, 128.0)
MIB = 1024 * 1024
OWN_LABEL = "script-own"  # a script's DDP (or DeepSpeed config) as written: commprof applies no bucket_cap_mb
BUILT_IN_STRATEGIES = ("ddp", "fsdp")  # a built-in model's; deepspeed: a DeepSpeed script's config


@dataclass(frozen=True)
class DDPOptions:
    """Options forwarded to DistributedDataParallel and the training loop."""

    owner: ClassVar[str] = "DDP options"  # what a refusal calls them
    script_only: ClassVar[str] = ""  # why they need a script, where they do
    backend_feature: ClassVar[str | None] = None  # the backends.Backend flag a backend needs to run them
    # given to every DistributedDataParallel a script builds, whatever --strategy names: a job of several kinds (an
    # FSDP encoder and a DDP head) keeps its DDP's while another kind's knobs are measured
    beside_others: ClassVar[bool] = True

    # None: commprof passes no bucket_cap_mb, so a script keeps its own (its sweep's baseline: OWN_LABEL)
    bucket_cap_mb: float | None = option(
        25.0,
        "DDP gradient bucket size cap in MB.",
        shown="25 for commprof's models; a script's DDP keeps its own unless given",
    )
    comm_hook: str = option("none", "Gradient compression hook: none, fp16 or bf16.")
    grad_accum: int = option(1, "Micro-batches per step; the first N-1 run under no_sync().")
    static_graph: bool = option(False, "DDP static_graph=True.")
    gradient_as_bucket_view: bool = option(False, "DDP gradient_as_bucket_view=True.")
    find_unused_parameters: bool = option(False, "DDP find_unused_parameters=True.")
    ddp_model: str | None = option(
        None,
        "A script with several DDP models: the one DDP's options are set on, by the name the report gives it (what "
        "the script passes to DDP, e.g. discriminator).",
        shown="every DDP the script builds",
    )
    # with ddp_model: the cap the script's other DDP models get (None: their own as written); a setting `commprof
    # advise` makes for one model of a run that capped every model (not an option of its own)
    others_bucket_cap_mb: float | None = None

    def label(self) -> str:
        parts = [OWN_LABEL if self.bucket_cap_mb is None else f"bucket-{self.bucket_cap_mb:g}mb"]
        if self.comm_hook != "none":
            parts.append(f"hook-{self.comm_hook}")
        if self.grad_accum > 1:
            parts.append(f"accum-{self.grad_accum}")
        for flag, name in (
            (self.static_graph, "static-graph"),
            (self.gradient_as_bucket_view, "bucket-view"),
            (self.find_unused_parameters, "find-unused"),
        ):
            if flag:
                parts.append(name)
        if self.ddp_model is not None and parts != [OWN_LABEL]:  # the script's own is its own for every model
            parts.append(f"for-{self.ddp_model.replace('#', '-')}")
            if self.others_bucket_cap_mb is not None:
                parts.append(f"others-{self.others_bucket_cap_mb:g}mb")
        return "_".join(parts)

    def __post_init__(self) -> None:
        require(
            self.bucket_cap_mb is None or self.bucket_cap_mb > 0,
            f"--bucket-cap-mb must be > 0, got {self.bucket_cap_mb or 0:g}",
        )
        require(self.comm_hook in COMM_HOOKS, f"--comm-hook must be one of {', '.join(COMM_HOOKS)}")
        require(self.grad_accum >= 1, f"--grad-accum must be >= 1, got {self.grad_accum}")
        require(
            not (self.static_graph and self.grad_accum > 1),
            "--static-graph with --grad-accum > 1 hits a known DDP bug (pytorch/pytorch#143580: "
            "the first backward under no_sync() fails an internal assert); use one or the other",
        )


@dataclass(frozen=True)
class FSDPOptions:
    """Options given to FSDP2's fully_shard (with --strategy fsdp) on each block and the root."""

    owner: ClassVar[str] = "FSDP options"
    beside_others: ClassVar[bool] = False
    script_only: ClassVar[str] = ""
    backend_feature: ClassVar[str | None] = "fsdp"

    # None: a script's fully_shard as written (its own, else FSDP's default: True)
    reshard_after_forward: bool | None = option(
        True,
        "FSDP: free the gathered parameters after each block's forward (they are all-gathered again in backward).",
        shown="True; a script's fully_shard keeps its own unless given",
    )
    forward_prefetch: int = option(
        0, "FSDP: blocks whose all-gathers each block issues ahead in forward (0: FSDP2's implicit overlap)."
    )
    backward_prefetch: int = option(
        1, "FSDP: blocks whose all-gathers each block issues ahead in backward (1: FSDP2's default)."
    )
    reduce_dtype: str = option(
        "fp32", "FSDP: dtype of the gradient reduce-scatter (MixedPrecisionPolicy): fp32, bf16 or fp16."
    )

    def label(self) -> str:
        own = self.reshard_after_forward is None
        parts = [] if own else ["reshard" if self.reshard_after_forward else "no-reshard"]
        if self.forward_prefetch:
            parts.append(f"fwd-prefetch-{self.forward_prefetch}")
        if self.backward_prefetch != 1:
            parts.append(f"bwd-prefetch-{self.backward_prefetch}")
        if self.reduce_dtype != "fp32":
            parts.append(f"reduce-{self.reduce_dtype}")
        return "_".join(parts) or OWN_LABEL

    def __post_init__(self) -> None:
        require(self.forward_prefetch >= 0, f"--forward-prefetch must be >= 0, got {self.forward_prefetch}")
        require(
            self.backward_prefetch >= 1,
            f"--backward-prefetch must be >= 1 (FSDP2 always prefetches one "
            f"block in backward), got {self.backward_prefetch}",
        )
        require(self.reduce_dtype in REDUCE_DTYPES, f"--reduce-dtype must be one of {', '.join(REDUCE_DTYPES)}")


def fsdp_as_written(options: FSDPOptions) -> FSDPOptions:
    """A script's own FSDP: its fully_shard calls as written, with only the options given that differ from FSDP2's
    defaults applied on top."""
    return dataclasses.replace(options, reshard_after_forward=None)


# DistributedDataParallel's own keyword arguments that DDPOptions sets (comm_hook is registered after it is built)
DDP_ARGUMENTS = ("bucket_cap_mb", "find_unused_parameters", "gradient_as_bucket_view", "static_graph")


# DeepSpeedOptions' fields by their names in DeepSpeed's "zero_optimization" config section
ZERO_CONFIG_NAMES = {
    "zero_stage": "stage",
    "reduce_bucket_size": "reduce_bucket_size",
    "allgather_bucket_size": "allgather_bucket_size",
    "overlap_comm": "overlap_comm",
}


@dataclass(frozen=True)
class DeepSpeedOptions:
    """ZeRO's settings that shape its communication (with --strategy deepspeed), set in the "zero_optimization"
    section of the config a DeepSpeed script gives deepspeed.initialize, by DeepSpeed's own names; each left at None
    stays as the script's config has it (a sweep's baseline: all None, the script as written)."""

    owner: ClassVar[str] = "DeepSpeed's ZeRO options"
    beside_others: ClassVar[bool] = False
    script_only: ClassVar[str] = (
        "--strategy deepspeed is for a DeepSpeed script, given after -- (... --strategy deepspeed -- train.py): its "
        "ZeRO options are set in the config the script gives deepspeed.initialize"
    )
    backend_feature: ClassVar[str | None] = None

    zero_stage: int | None = option(
        None, "DeepSpeed: ZeRO stage, zero_optimization.stage (0-3) [default: the script's config]."
    )
    reduce_bucket_size: float | None = option(
        None,
        "DeepSpeed: elements per gradient reduction bucket, zero_optimization.reduce_bucket_size (e.g. 5e8) "
        "[default: the script's config].",
    )
    allgather_bucket_size: float | None = option(
        None,
        "DeepSpeed: elements per parameter all-gather bucket at stages 1-2, zero_optimization.allgather_bucket_size "
        "[default: the script's config].",
    )
    overlap_comm: bool | None = option(
        None,
        "DeepSpeed: reduce gradients while backward runs, zero_optimization.overlap_comm [default: the script's "
        "config].",
    )

    def __post_init__(self) -> None:
        require(
            self.zero_stage is None or self.zero_stage in ZERO_STAGES,
            f"--zero-stage must be one of {', '.join(map(str, ZERO_STAGES))}, got {self.zero_stage}",
        )
        for name in ("reduce_bucket_size", "allgather_bucket_size"):
            value = getattr(self, name)
            if value is not None:
                require(value >= 1, f"--{name.replace('_', '-')} must be >= 1 element, got {value:g}")

    def label(self) -> str:
        zero = [
            *([f"stage-{self.zero_stage}"] if self.zero_stage is not None else []),
            *([f"reduce-{elements(self.reduce_bucket_size)}"] if self.reduce_bucket_size is not None else []),
            *([f"allgather-{elements(self.allgather_bucket_size)}"] if self.allgather_bucket_size else []),
            *([] if self.overlap_comm is None else ["overlap" if self.overlap_comm else "no-overlap"]),
        ]
        return "_".join(zero) or OWN_LABEL

    def zero_config(self) -> dict[str, Any]:
        """The "zero_optimization" entries this setting sets, by DeepSpeed's names (none: the config as written)."""
        given = {ZERO_CONFIG_NAMES[f.name]: getattr(self, f.name) for f in dataclasses.fields(self)}
        return {name: int(v) if isinstance(v, float) else v for name, v in given.items() if v is not None}


@dataclass(frozen=True)
class HorovodOptions:
    """Horovod's settings that shape its communication (with --strategy horovod), set as the environment variables
    its users set before horovodrun; each left at None stays as the job's environment has it (Horovod's defaults:
    a 128 MiB fusion buffer, a 1 ms cycle)."""

    owner: ClassVar[str] = "Horovod's options"
    beside_others: ClassVar[bool] = False
    script_only: ClassVar[str] = (
        "--strategy horovod is for a Horovod script, given after -- (... --strategy horovod -- train.py): its "
        "fusion buffer and cycle are set in its environment"
    )
    backend_feature: ClassVar[str | None] = None

    fusion_threshold_mb: float | None = option(
        None,
        "Horovod: the tensor fusion buffer in MiB, HOROVOD_FUSION_THRESHOLD (Horovod's bucket_cap_mb; 0 fuses "
        "nothing) [default: the job's environment, else 128].",
    )
    cycle_time_ms: float | None = option(
        None,
        "Horovod: ms between its background thread's cycles of fusing and launching tensors, HOROVOD_CYCLE_TIME "
        "[default: the job's environment, else 1].",
    )

    def __post_init__(self) -> None:
        require(
            self.fusion_threshold_mb is None or self.fusion_threshold_mb >= 0,
            f"--fusion-threshold-mb must be >= 0, got {self.fusion_threshold_mb}",
        )
        require(
            self.cycle_time_ms is None or self.cycle_time_ms > 0,
            f"--cycle-time-ms must be > 0, got {self.cycle_time_ms}",
        )

    def label(self) -> str:
        parts = [
            *([f"fusion-{self.fusion_threshold_mb:g}mb"] if self.fusion_threshold_mb is not None else []),
            *([f"cycle-{self.cycle_time_ms:g}ms"] if self.cycle_time_ms is not None else []),
        ]
        return "_".join(parts) or OWN_LABEL

    def environment(self) -> dict[str, str]:
        """The variables this setting sets, by Horovod's names (none: the job's environment as it is)."""
        given = {
            "HOROVOD_FUSION_THRESHOLD": None
            if self.fusion_threshold_mb is None
            else str(int(self.fusion_threshold_mb * MIB)),
            "HOROVOD_CYCLE_TIME": None if self.cycle_time_ms is None else f"{self.cycle_time_ms:g}",
        }
        return {name: value for name, value in given.items() if value is not None}


def elements(count: float) -> str:
    """A bucket size in elements as DeepSpeed's configs write it, folder-safe: 5e8, 2.5e5, 1500."""
    if count < 1e4:
        return f"{count:g}"
    exponent = math.floor(math.log10(count))
    return f"{count / 10**exponent:.4g}e{exponent}"


SettingOptions = DDPOptions | FSDPOptions | DeepSpeedOptions | HorovodOptions
OPTIONS_OF_STRATEGY: dict[str, type] = {
    "ddp": DDPOptions,
    "fsdp": FSDPOptions,
    "deepspeed": DeepSpeedOptions,
    "horovod": HorovodOptions,
}


def changed_options(options: SettingOptions) -> list[str]:
    """The options (as flags, without dashes) that differ from their defaults."""
    return [f.name.replace("_", "-") for f in dataclasses.fields(options) if getattr(options, f.name) != f.default]


def applied_to_a_script(options: DDPOptions, forced: tuple[str, ...] = ()) -> dict[str, Any]:
    """The arguments commprof gives every DistributedDataParallel a script builds: those that differ from DDP's
    defaults, and those in `forced` even at their default, but never a bucket_cap_mb of None (the script's own);
    a comm hook other than none under the name comm_hook."""
    defaults = DDPOptions()
    applied: dict[str, Any] = {
        name: getattr(options, name)
        for name in DDP_ARGUMENTS
        if getattr(options, name) is not None and (getattr(options, name) != getattr(defaults, name) or name in forced)
    }
    return applied | ({"comm_hook": options.comm_hook} if options.comm_hook != "none" else {})


def own_setting(options: DDPOptions) -> DDPOptions:
    """A script's own setting: its DistributedDataParallel as written, with only the options given that differ from
    DDP's defaults applied on top (none, unless --comm-hook, --find-unused-parameters, ... were given)."""
    return dataclasses.replace(options, bucket_cap_mb=None)


def setting_label(options: SettingOptions) -> str:
    """A folder-safe name for one setting, e.g. 'bucket-25mb', 'bucket-5mb_hook-fp16', 'script-own' (a script's DDP
    or DeepSpeed config as written), 'no-reshard_fwd-prefetch-2' or 'stage-2_reduce-5e5_no-overlap'."""
    return options.label()
