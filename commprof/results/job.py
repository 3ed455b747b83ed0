"""The job as a run really built it, one value (`Job`), recorded by a script's ranks as they build each instance
(commprof's own model's: described from its config) and read by every stage that needs to know what kind of job it
is: each instance of each kind (a DistributedDataParallel, an FSDP2 root, a DeepSpeed engine, Horovod's
DistributedOptimizer), its model, what the script asked for, what commprof set and the process groups it talks over.
Also the facts that scale and compare share (`JobAsRun`: render/job_text.py makes their words)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import msgspec

from commprof.config import RunConfig

# the kinds in the order a job of several is told and measured (the first of them is the one a sweep sets, unless
# the command line names another); each is a kinds.KINDS key and the tag of its record below
KIND_ORDER = ("ddp", "deepspeed", "fsdp", "horovod")


class _Instance(msgspec.Struct, frozen=True, tag_field="kind"):
    """What every instance says of itself, whatever its kind: its kind (the record's tag), its label (the name the
    script gives it, else its class), who built it and over which process groups it talks."""

    @property
    def kind(self) -> str:
        return str(type(self).__struct_config__.tag)

    @property
    def label(self) -> str:
        return getattr(self, "name", "") or getattr(self, "module", "")


class BuiltDDP(_Instance, frozen=True, tag="ddp"):
    """A DistributedDataParallel a run built (a script's, instrument/ddp.py; commprof's own model's), and what it
    asked for and got."""

    module: str
    built_by: str = "script"  # "script", "transformers" (Trainer), "lightning", or "commprof" (its own model)
    parameters: int = 0
    parameter_sizes: list[int] = []  # bytes per parameter, in registration order
    asked: dict[str, Any] = {}  # the script's own DDP arguments
    applied: dict[str, Any] = {}  # what commprof set on top of them
    # how the script names it: the module it passed to DDP, as written ("discriminator"), else the name it assigns the
    # DDP to ("head"), else its class; unique among the script's DDPs (a second of the same name gets "#2")
    name: str = ""
    built_at: str = ""  # where the script built it: "train_gan.py:23"
    groups: list[str] = []  # the process groups it talks over, by name; empty: the default group


class BuiltFSDP(_Instance, frozen=True, tag="fsdp"):
    """A model sharded with FSDP2's fully_shard (a script's, instrument/fsdp_script.py; commprof's own model's): its
    root, each unit (each fully_shard call, the root last), what the script asked for and what commprof set on top."""

    module: str  # the root's class
    name: str = ""  # what the script passes to fully_shard for the root ("model"), else its class
    built_at: str = ""  # where the script sharded the root: "train_fsdp.py:13"
    parameters: int = 0
    units: list[str] = []  # each unit's module class, in the order it was sharded
    unit_parameters: list[int] = []  # the parameters each unit holds (not its units')
    # each unit's padded shard per rank, in elements (0: not known): an all-gather moves it (Gloo's count) or ranks
    # times it (NCCL's, its output); a reduce-scatter ranks times it
    unit_shard_elements: list[int] = []
    # by FSDPOptions' names: reshard_after_forward (None: FSDP's default), reduce_dtype ("fp32": the parameters' own)
    asked: dict[str, Any] = {}
    applied: dict[str, Any] = {}  # what commprof set: reshard, prefetch depths, reduce dtype
    built_by: str = "script"
    groups: list[str] = []


class BuiltDeepSpeed(_Instance, frozen=True, tag="deepspeed"):
    """A DeepSpeed engine a user's script built (instrument/deepspeed.py): its ZeRO stage and the settings that shape
    its communication, by the names of DeepSpeed's config (`zero_optimization`), as the engine got them."""

    module: str
    zero_stage: int
    settings: dict[str, Any] = {}  # reduce_bucket_size, allgather_bucket_size, overlap_comm..
    built_by: str = "script"  # "script", "transformers" (Trainer) or "lightning"
    parameters: int = 0
    # the zero_optimization entries commprof set on the script's config (--strategy deepspeed)
    applied: dict[str, Any] = {}
    name: str = ""  # what the script passes as deepspeed.initialize's model ("actor"), else its class
    built_at: str = ""  # where the script built it: "train.py:40"
    groups: list[str] = []

    @property
    def asked(self) -> dict[str, Any]:
        return self.settings


class BuiltHorovod(_Instance, frozen=True, tag="horovod"):
    """Horovod's DistributedOptimizer a user's script built (instrument/horovod.py), and the settings that shaped its
    communication as the ranks had them: the fusion buffer and the cycle (Horovod's defaults where not set)."""

    optimizer: str  # the optimizer it wraps: SGD, AdamW, ...
    parameters: int = 0
    parameter_sizes: list[int] = []  # bytes per parameter, in the optimizer's order
    fusion_threshold_bytes: int = 128 * 1024 * 1024  # HOROVOD_FUSION_THRESHOLD
    cycle_time_ms: float = 1.0  # HOROVOD_CYCLE_TIME
    backward_passes_per_step: int = 1
    compression: str = "none"
    applied: dict[str, str] = {}  # the variables commprof set (--strategy horovod)
    timeline: str | None = None  # rank 0's HOROVOD_TIMELINE, in the run folder
    built_by: str = "script"
    groups: list[str] = []

    @property
    def module(self) -> str:
        """What the report names it by: it wraps an optimizer, and knows no module."""
        return f"Horovod DistributedOptimizer({self.optimizer})"

    @property
    def asked(self) -> dict[str, Any]:
        return {}


Built = BuiltDDP | BuiltFSDP | BuiltDeepSpeed | BuiltHorovod
B = TypeVar("B", BuiltDDP, BuiltFSDP, BuiltDeepSpeed, BuiltHorovod)


@dataclass(frozen=True)
class Job:
    """What a run built, every instance of every kind, in the order each kind built them. The one answer to what
    kind of job a run is: nothing else decides it (docs/architecture.md, "One description of the job")."""

    built: list[Built] = field(default_factory=list)

    @property
    def kinds(self) -> tuple[str, ...]:
        """The kinds the job holds, in KIND_ORDER; none: a script of its own collectives (or nothing distributed)."""
        return tuple(kind for kind in KIND_ORDER if any(b.kind == kind for b in self.built))

    @property
    def kind(self) -> str | None:
        """The kind measured where one is (a sweep's, tune's, the whole run's): the first of `kinds`."""
        return next(iter(self.kinds), None)

    @property
    def measured(self) -> Built | None:
        """The first instance of the kind measured: the model a report names first."""
        return next((b for b in self.built if b.kind == self.kind), None)

    def alone(self, kind: str) -> bool:
        """The job holds instances of this kind and of no other."""
        return self.kinds == (kind,)

    def of(self, record: type[B]) -> list[B]:
        """The instances of one kind, by its record's type, in the order they were built."""
        return [b for b in self.built if isinstance(b, record)]

    def first(self, record: type[B]) -> B | None:
        """The first instance of a kind (the one measured where a command measures one)."""
        return next(iter(self.of(record)), None)

    def named(self, record: type[B], label: str | None) -> B | None:
        """The instance of a kind named `label`, else its first."""
        return next((b for b in self.of(record) if b.label == label), self.first(record))


def built_in(config: RunConfig, model: str | None, parameters: int | None, sizes: Iterable[int] | None) -> Job:
    """The job commprof's own model trains (`commprof run` without a script): one instance of the strategy's kind,
    built by commprof with the options it was given, described as a script's would be."""
    options = config.options
    # what commprof passed its own model: every option it was given (none left to the defaults of DDP or FSDP)
    applied = {name: value for name, value in dataclasses.asdict(options).items() if value is not None}
    name = model or "model"
    built: dict[str, Callable[[], Built]] = {
        "ddp": lambda: BuiltDDP(name, "commprof", parameters or 0, list(sizes or []), applied=applied, name=name),
        "fsdp": lambda: BuiltFSDP(name, name=name, parameters=parameters or 0, applied=applied, built_by="commprof"),
    }  # the kinds of job commprof's own model trains (settings.BUILT_IN_STRATEGIES)
    return Job([built[config.strategy]()])


_OLD_FIELDS = {"ddp_built": "ddp", "fsdp_built": "fsdp", "deepspeed_built": "deepspeed", "horovod_built": "horovod"}


def upgraded(data: dict[str, Any]) -> dict[str, Any]:
    """A run's record (run.json, a report's "run", a rank's account) as written before the job was one value: its
    per-kind lists of what the script built become the job's instances, each tagged with its kind."""
    if not any(name in data for name in _OLD_FIELDS):
        return data
    new = {k: v for k, v in data.items() if k not in _OLD_FIELDS}
    if "job" not in data:
        built = [{"kind": kind, **b} for name, kind in _OLD_FIELDS.items() for b in data.get(name) or []]
        new["job"] = {"built": built}
    return new


@dataclass(frozen=True)
class CollectiveBusbw:
    """One collective the job ran, by what the job ran it as, at one size: its bus bandwidth."""

    collective: str  # what the job ran: all_reduce, all_gather, reduce_scatter (FSDP's purpose where the trace says)
    op: str  # what the backend ran it as: Gloo runs FSDP's reduce-scatter as an all_reduce of the whole buffer
    bytes: int
    busbw_gbps: float


@dataclass(frozen=True)
class JobAsRun:
    """What a run trained: its kind, its model as built and the kind's own settings, as far as the run recorded."""

    # the kind of job (kinds.KINDS): ddp, fsdp, deepspeed, horovod; None: a script that built none commprof saw
    strategy: str | None
    model: str | None = None  # the module's class (a built-in model's name); None: not recorded
    parameters: int | None = None  # None: not known
    # the kind's own options as the job ran with them, by the kind's own names; None: not recorded (a script's own)
    settings: dict[str, Any] | None = None
