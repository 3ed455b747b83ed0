"""run.json: what a run of commprof's own did, one typed record, written and read only here.

Rank 0 writes it when the run starts (status "running"), replaces it when the run completes ("complete", with
every rank's step times), and the launcher marks it "failed" when a rank fails, or "interrupted" when commprof was
stopped (SIGINT, SIGTERM), with the steps every rank completed. A record from an older commprof
loads with the fields it lacks at their defaults; fields this version does not know are ignored."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from commprof.config import RunConfig
from commprof.results.common import as_text
from commprof.results.sequences import GroupSequence
from commprof.settings import ZERO_CONFIG_NAMES

RUN_RECORD_VERSION = 1
# "running" also stays in the run.json of a launcher that was killed (SIGKILL) before it could mark its run
RUN_STATUSES = ("running", "complete", "failed", "interrupted")


@dataclass(frozen=True)
class ClockOffset:
    """One host's clock against rank 0's host's (worker/clocks.py measures it)."""

    host: str
    offset_us: float  # this host's clock minus rank 0's host's clock
    round_trip_us: float  # of the best round; the offset's error is at most half of it


@dataclass(frozen=True)
class ProbedSize:
    """All-reduces of one size timed alone after training (instrument/link_probe.py): every repeat, in us."""

    bytes: int
    us: list[float]


@dataclass(frozen=True)
class ProbedTier:
    """The link probe of one tier of the network (instrument/link_probe.py): all-reduces among the ranks of one
    host ("host": shared memory or loopback), or among one rank per host ("network": the link between hosts)."""

    tier: str  # "host" or "network"
    ranks: list[int]  # the group that was probed
    sizes: list[ProbedSize]


@dataclass(frozen=True)
class CastCost:
    """What compressing a gradient costs on a rank's device, measured alone after training: a float32 buffer of
    `bytes` cast to `dtype` and back (what torch's fp16/bf16 compression hooks add to each bucket), every repeat."""

    dtype: str  # "float16" or "bfloat16"
    bytes: int  # of the float32 buffer
    us: list[float]
    # the cast buffer (bytes / 2 of `dtype`) all-reduced alone over the job, every repeat (the fastest rank's), at
    # the link probe's sizes: what the halved bytes take on the link, 16-bit sums included (empty at other sizes)
    allreduce_us: list[float] = field(default_factory=list)


class _Named:
    """What a script built, by the name the script gives it (its `name`), else (an older record) its module's class."""

    name: str
    module: str

    @property
    def label(self) -> str:
        return self.name or self.module


@dataclass(frozen=True)
class BuiltDDP(_Named):
    """A DistributedDataParallel a user's script built (instrument/ddp.py), and what it asked for and got."""

    module: str
    built_by: str = "script"  # "script", "transformers" (Trainer) or "lightning"
    parameters: int = 0
    parameter_sizes: list[int] = field(default_factory=list)  # bytes per parameter, in registration order
    asked: dict[str, Any] = field(default_factory=dict)  # the script's own DDP arguments
    applied: dict[str, Any] = field(default_factory=dict)  # what commprof set on top of them
    # how the script names it: the module it passed to DDP, as written ("discriminator"), else its class; unique
    # among the script's DDPs (a second of the same name gets "#2")
    name: str = ""
    built_at: str = ""  # where the script built it: "train_gan.py:23"


@dataclass(frozen=True)
class BuiltFSDP(_Named):
    """A model a user's script sharded with FSDP2's fully_shard (instrument/fsdp_script.py): its root, each unit
    (each fully_shard call, the root last), what the script asked for and what commprof set on top."""

    module: str  # the root's class
    name: str = ""  # what the script passes to fully_shard for the root ("model"), else its class
    built_at: str = ""  # where the script sharded the root: "train_fsdp.py:13"
    parameters: int = 0
    units: list[str] = field(default_factory=list)  # each unit's module class, in the order it was sharded
    unit_parameters: list[int] = field(default_factory=list)  # the parameters each unit holds (not its units')
    # each unit's padded shard per rank, in elements (0: not known): an all-gather moves it (Gloo's count) or ranks
    # times it (NCCL's, its output); a reduce-scatter ranks times it
    unit_shard_elements: list[int] = field(default_factory=list)
    # by FSDPOptions' names: reshard_after_forward (None: FSDP's default), reduce_dtype ("fp32": the parameters' own)
    asked: dict[str, Any] = field(default_factory=dict)
    applied: dict[str, Any] = field(default_factory=dict)  # what commprof set: reshard, prefetch depths, reduce dtype


@dataclass(frozen=True)
class Compiled:
    """torch.compile in a script's run (instrument/compiled.py)."""

    what: str  # what the script compiled: its model ("GPT"), DDP around it ("DistributedDataParallel(GPT)"), a function
    backend: str  # "inductor", "aot_eager", a callable backend's name
    mode: str | None = None
    steps: list[int] = field(default_factory=list)  # the steps in which Dynamo compiled (a recompile too), the first 64
    steps_more: int = 0  # compile steps beyond those
    # each graph DDPOptimizer split at DDP's buckets: its parts' parameter bytes, in DDP's order (the last layers first)
    graphs: list[list[int]] = field(default_factory=list)
    bucket_cap_bytes: int | None = None  # the cap it split them at (DDP's bucket_cap_mb)


@dataclass(frozen=True)
class BuiltHorovod:
    """Horovod's DistributedOptimizer a user's script built (instrument/horovod.py), and the settings that shaped its
    communication as the ranks had them: the fusion buffer and the cycle (Horovod's defaults where not set)."""

    optimizer: str  # the optimizer it wraps: SGD, AdamW, ...
    parameters: int = 0
    parameter_sizes: list[int] = field(default_factory=list)  # bytes per parameter, in the optimizer's order
    fusion_threshold_bytes: int = 128 * 1024 * 1024  # HOROVOD_FUSION_THRESHOLD
    cycle_time_ms: float = 1.0  # HOROVOD_CYCLE_TIME
    backward_passes_per_step: int = 1
    compression: str = "none"
    applied: dict[str, str] = field(default_factory=dict)  # the variables commprof set (--strategy horovod)
    timeline: str | None = None  # rank 0's HOROVOD_TIMELINE, in the run folder


@dataclass(frozen=True)
class BuiltDeepSpeed(_Named):
    """A DeepSpeed engine a user's script built (instrument/deepspeed.py): its ZeRO stage and the settings that shape
    its communication, by the names of DeepSpeed's config (`zero_optimization`), as the engine got them."""

    module: str
    zero_stage: int
    settings: dict[str, Any] = field(default_factory=dict)  # reduce_bucket_size, allgather_bucket_size, overlap_comm..
    built_by: str = "script"  # "script", "transformers" (Trainer) or "lightning"
    parameters: int = 0
    # the zero_optimization entries commprof set on the script's config (--strategy deepspeed)
    applied: dict[str, Any] = field(default_factory=dict)
    name: str = ""  # what the script passes as deepspeed.initialize's model ("actor"), else its class
    built_at: str = ""  # where the script built it: "train.py:40"


@dataclass(frozen=True)
class RankRecord:
    rank: int
    host: str = ""
    device: str | None = None
    trace: str | None = None  # the trace's file name in the run folder
    trace_path: str | None = None  # where the rank wrote it, on its host (nodes may share no file system)
    step_ms: list[float] = field(default_factory=list)  # every step, profiled or not, to step_log.steps_kept
    ddp: dict[str, Any] = field(default_factory=dict)  # DDP's own logging data, under torch's names
    peak_memory_mb: dict[str, float] = field(default_factory=dict)  # "allocated"/"reserved" on GPU, "rss" on CPU


@dataclass(frozen=True)
class ScriptRankInfo:
    """What a rank running a user's script learned by its end (its step log carries it to the launcher, which
    completes run.json from every rank's)."""

    device: str | None = None
    trace: str | None = None
    link_probe: list[ProbedSize] = field(default_factory=list)
    link_tiers: list[ProbedTier] = field(default_factory=list)
    cast_costs: list[CastCost] = field(default_factory=list)
    ddp: dict[str, Any] = field(default_factory=dict)
    ddp_built: list[BuiltDDP] = field(default_factory=list)
    fsdp_built: list[BuiltFSDP] = field(default_factory=list)
    deepspeed_built: list[BuiltDeepSpeed] = field(default_factory=list)
    horovod_built: list[BuiltHorovod] = field(default_factory=list)
    optimizer: str | None = None  # whose steps are the steps
    peak_memory_mb: dict[str, float] = field(default_factory=dict)
    tf32: dict[str, bool] | None = None
    notes: list[str] = field(default_factory=list)
    collectives: list[GroupSequence] = field(default_factory=list)  # its whole run's, where the script ended
    compiled: Compiled | None = None

    def to_dict(self) -> dict[str, Any]:
        return msgspec.to_builtins(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ScriptRankInfo:
        return msgspec.convert(data, cls)


@dataclass(frozen=True)
class RunRecord:
    run_id: str
    config: RunConfig
    version: int = RUN_RECORD_VERSION
    status: str = "running"  # one of RUN_STATUSES
    error: str | None = None  # why it failed, or how it was interrupted ("interrupted by SIGINT")
    versions: dict[str, Any] = field(default_factory=dict)
    world_size: int = 0
    hosts: list[str] = field(default_factory=list)
    model: str | None = None
    parameters: int | None = None
    parameter_bytes: int | None = None
    parameter_sizes: list[int] | None = None  # bytes per parameter, registration order (built-in models)
    start_time: str | None = None
    end_time: str | None = None
    clock_offsets: list[ClockOffset] = field(default_factory=list)
    tf32: dict[str, bool] | None = None
    script: list[str] | None = None  # a user's script and its arguments
    steps_completed: int | None = None
    steps_done_by_rank: dict[str, int] = field(default_factory=dict)  # a failed run's, by rank
    link_probe: list[ProbedSize] = field(default_factory=list)
    link_tiers: list[ProbedTier] = field(default_factory=list)  # per tier, where the job has more than one
    cast_costs: list[CastCost] = field(default_factory=list)  # rank 0's
    ddp_built: list[BuiltDDP] = field(default_factory=list)
    fsdp_built: list[BuiltFSDP] = field(default_factory=list)
    deepspeed_built: list[BuiltDeepSpeed] = field(default_factory=list)
    horovod_built: list[BuiltHorovod] = field(default_factory=list)
    compiled: Compiled | None = None  # a script's torch.compile: rank 0's, its compile steps those of every rank
    notes: list[str] = field(default_factory=list)
    ranks: list[RankRecord] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps(msgspec.to_builtins(self, enc_hook=as_text), indent=2)

    @classmethod
    def from_json(cls, text: str | bytes) -> RunRecord:
        """Raises ValueError for text that is not a run record."""
        try:
            return msgspec.json.decode(text, type=cls, dec_hook=_decode)
        except msgspec.MsgspecError as exc:
            raise ValueError(str(exc)) from None

    def summary(self) -> RunSummary:
        """The parts of the record a report shows (report.json's "run")."""
        return RunSummary(
            run_id=self.run_id,
            model=self.model,
            parameters=self.parameters,
            world_size=self.world_size,
            backend=self.config.backend,
            device=self.config.device,
            hosts=self.hosts,
            versions=self.versions,
            config=self.config,
            start_time=self.start_time,
            end_time=self.end_time,
            status=self.status,
            error=self.error,
            steps_completed=self.steps_completed,
            clock_offsets=self.clock_offsets,
            ddp={str(r.rank): r.ddp for r in self.ranks},
            peak_gpu_memory_mb={str(r.rank): r.peak_memory_mb for r in self.ranks if "allocated" in r.peak_memory_mb},
            peak_rss_mb={str(r.rank): r.peak_memory_mb["rss"] for r in self.ranks if "rss" in r.peak_memory_mb},
            tf32=self.tf32,
            script=self.script,
            ddp_built=self.ddp_built,
            fsdp_built=self.fsdp_built,
            deepspeed_built=self.deepspeed_built,
            horovod_built=self.horovod_built,
            compiled=self.compiled,
            notes=self.notes,
            link_probe=self.link_probe,
            link_tiers=self.link_tiers,
            cast_costs=self.cast_costs,
            rank_hosts={str(r.rank): r.host for r in self.ranks if r.host},
            parameter_sizes=self.parameter_sizes or (self.ddp_built[0].parameter_sizes if self.ddp_built else None),
        )


@dataclass(frozen=True)
class RunSummary:
    """What a report says about the run commprof made its traces in (report.json's "run"; None for traces from
    elsewhere)."""

    run_id: str
    config: RunConfig
    model: str | None = None
    parameters: int | None = None
    world_size: int = 0
    backend: str = ""
    device: str = ""
    hosts: list[str] = field(default_factory=list)
    versions: dict[str, Any] = field(default_factory=dict)
    start_time: str | None = None
    end_time: str | None = None
    status: str = "complete"
    error: str | None = None
    steps_completed: int | None = None
    clock_offsets: list[ClockOffset] = field(default_factory=list)
    ddp: dict[str, dict[str, Any]] = field(default_factory=dict)  # per rank: DDP's own logging data
    peak_gpu_memory_mb: dict[str, dict[str, float]] = field(default_factory=dict)  # per rank: allocated, reserved
    peak_rss_mb: dict[str, float] = field(default_factory=dict)  # per CPU rank
    tf32: dict[str, bool] | None = None
    script: list[str] | None = None
    ddp_built: list[BuiltDDP] = field(default_factory=list)
    fsdp_built: list[BuiltFSDP] = field(default_factory=list)
    deepspeed_built: list[BuiltDeepSpeed] = field(default_factory=list)
    horovod_built: list[BuiltHorovod] = field(default_factory=list)
    compiled: Compiled | None = None
    notes: list[str] = field(default_factory=list)
    link_probe: list[ProbedSize] = field(default_factory=list)
    link_tiers: list[ProbedTier] = field(default_factory=list)
    cast_costs: list[CastCost] = field(default_factory=list)
    rank_hosts: dict[str, str] = field(default_factory=dict)  # rank -> the host it ran on
    parameter_sizes: list[int] | None = None  # bytes per parameter, registration order

    def settings(self, with_defaults: bool = True) -> dict[str, str]:
        """What shaped the run's communication, by name: DDP's arguments as its DDP got them (a script's own, with
        what commprof applied on top marked so), the comm hook and gradient accumulation, or FSDP's options; the
        precision of a built-in model; a script's arguments. `with_defaults` False: DDP's options at DDP's
        defaults left out, but for the bucket cap and the hook (a header's short list)."""
        config = self.config
        always = (
            "script",
            "bucket_cap_mb",
            "comm_hook",
            "fsdp",
            "reshard_after_forward",
            "precision",
            "deepspeed",
            "horovod",
        )
        if config.strategy == "fsdp" and not self.script:
            shown = {f.name: str(getattr(config.fsdp, f.name)) for f in dataclasses.fields(config.fsdp)}
            defaults = {f.name: str(f.default) for f in dataclasses.fields(config.fsdp)}
        elif self.script is None:
            shown = {f.name: str(getattr(config.ddp, f.name)) for f in dataclasses.fields(config.ddp)}
            defaults = {f.name: str(f.default) for f in dataclasses.fields(config.ddp)}
        else:
            shown, defaults = {"script": " ".join(self.script)}, {}
            for engine in self.deepspeed_built[:1]:  # the first DeepSpeed engine: the one measured
                ran = {"deepspeed": engine.zero_stage, **engine.settings}
                shown |= {
                    name: f"{value} (commprof's)" if _APPLIED_AS.get(name, name) in engine.applied else str(value)
                    for name, value in ran.items()
                }
                shown["deepspeed"] = f"ZeRO stage {shown['deepspeed']}"
            for hvd in self.horovod_built[:1]:  # Horovod's, as its ranks had it
                fusion, cycle = "HOROVOD_FUSION_THRESHOLD", "HOROVOD_CYCLE_TIME"
                shown["horovod"] = (
                    f"fusion buffer {hvd.fusion_threshold_bytes / 2**20:g} MiB"
                    + (" (commprof's)" if fusion in hvd.applied else "")
                    + f", cycle {hvd.cycle_time_ms:g} ms"
                    + (" (commprof's)" if cycle in hvd.applied else "")
                )
            for sharded in self.fsdp_built[:1]:  # the script's fully_shard, as written and with commprof's on top
                units, models = sum(len(b.units) for b in self.fsdp_built), len(self.fsdp_built)
                shown["fsdp"] = f"{units} fully_shard units" + (f" in {models} models" if models > 1 else "")
                for name in ("reshard_after_forward", "forward_prefetch", "backward_prefetch", "reduce_dtype"):
                    if name in sharded.applied:
                        shown[name] = f"{sharded.applied[name]} (commprof's)"
                    elif sharded.asked.get(name) is not None:
                        shown[name] = str(sharded.asked[name])
                shown.setdefault("reshard_after_forward", "FSDP's default")
            for built in self.ddp_built:  # each DDP the script built, by its name where it built several
                whose = f"{built.label}." if len(self.ddp_built) > 1 else ""
                for name, asked in built.asked.items():
                    applied = built.applied.get(name, asked)
                    own = "DDP's default" if asked is None else str(asked)
                    shown[whose + name] = f"{applied} (commprof's; the script's {own})" if applied != asked else own
                    defaults[whose + name] = "False"
            if config.ddp.comm_hook != "none":
                shown["comm_hook"] = f"{config.ddp.comm_hook} (commprof's)"
        if not self.script:
            shown["precision"] = config.precision
        return {k: v for k, v in shown.items() if with_defaults or k.split(".")[-1] in always or v != defaults.get(k)}


_APPLIED_AS = {"deepspeed": ZERO_CONFIG_NAMES["zero_stage"]}  # the settings line's name -> DeepSpeed's config's


def _decode(kind: type, obj: Any) -> Any:
    if kind is Path:
        return Path(obj)
    raise NotImplementedError(kind)
