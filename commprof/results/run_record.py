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
from commprof.results.failure_facts import Failure, Parting
from commprof.results.job import BuiltDDP, BuiltDeepSpeed, BuiltFSDP, BuiltHorovod, Job, built_in, upgraded
from commprof.results.sequences import GroupSequence
from commprof.settings import ZERO_CONFIG_NAMES

RUN_RECORD_VERSION = 2  # 2: what the run built is its job (results/job.py), not a list per kind
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
class RankRecord:
    rank: int
    host: str = ""
    device: str | None = None
    trace: str | None = None  # the trace's file name in the run folder
    trace_path: str | None = None  # where the rank wrote it, on its host (nodes may share no file system)
    step_ms: list[float] = field(default_factory=list)  # every step, profiled or not, to step_log.steps_kept
    ddp: dict[str, Any] = field(default_factory=dict)  # DDP's own logging data, under torch's names
    peak_memory_mb: dict[str, float] = field(default_factory=dict)  # "allocated"/"reserved" on GPU, "rss" on CPU
    joined_steps: int = 0  # steps it shadowed under Join after its own inputs ran out (ScriptRankInfo.joined_steps)


@dataclass(frozen=True)
class Skipped:
    """commprof's link probe and digests after the script were skipped (the ranks did not all stay: `why`), or
    failed (`failed`)."""

    why: str
    failed: bool = False


@dataclass(frozen=True)
class ScriptNotes:
    """What a script's rank saw of it that the report notes (render/notes_text.py says them): no optimizer step, the
    other optimizers it stepped, the settings that acted on nothing it built, another kind or backend than asked,
    ranks that never communicated, commprof's own measurements skipped."""

    stepped: bool = True  # False: no optimizer step, its whole run one window
    counted: str | None = None  # the optimizer whose steps are the steps
    others: list[str] = field(default_factory=list)  # the other optimizers it stepped
    unused: str | None = None  # the --strategy whose options acted on nothing the script built
    horovod: bool = False  # it trains with Horovod (--strategy another kind)
    deepspeed_stage: int | None = None  # it trains with DeepSpeed at this ZeRO stage, not DDP
    ddp_given: bool = False  # DDP options were given
    no_ddp: bool = False  # ... and it built no DDP
    ddp_target: str | None = None  # --ddp-model named a DDP it did not build
    ddp_built: list[str] = field(default_factory=list)  # the DDPs it built, then
    backend_asked: str | None = None  # its init_process_group asked for this backend; commprof gave it another
    backend_given: str | None = None
    communicated: bool = True  # False: several ranks that never initialized torch.distributed
    skipped: Skipped | None = None


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
    job: Job = field(default_factory=Job)  # what the rank's script built
    optimizer: str | None = None  # whose steps are the steps
    joined_steps: int = 0  # optimizer steps taken inside Join's shadow of the others' (its inputs ran out): not its own
    peak_memory_mb: dict[str, float] = field(default_factory=dict)
    tf32: dict[str, bool] | None = None
    notes: list[str] = field(default_factory=list)  # an older commprof's words
    script_notes: ScriptNotes | None = None
    collectives: list[GroupSequence] = field(default_factory=list)  # its whole run's, where the script ended
    compiled: Compiled | None = None

    def to_dict(self) -> dict[str, Any]:
        return msgspec.to_builtins(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ScriptRankInfo:
        return msgspec.convert(upgraded(data), cls)


@dataclass(frozen=True)
class RunRecord:
    run_id: str
    config: RunConfig
    version: int = RUN_RECORD_VERSION
    status: str = "running"  # one of RUN_STATUSES
    error: str | None = None  # how it was interrupted ("interrupted by SIGINT"), or a setup problem's line
    failure: Failure | None = None  # why it failed (results/failure_facts.py)
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
    job: Job = field(default_factory=Job)  # what the run built (a built-in model's: resolved from its config)
    compiled: Compiled | None = None  # a script's torch.compile: rank 0's, its compile steps those of every rank
    optimizer: str | None = None  # rank 0's optimizer whose steps are the steps (its class, named by its model)
    notes: list[str] = field(default_factory=list)  # an older commprof's words
    script_notes: ScriptNotes | None = None  # what rank 0 saw of a script that the report notes
    desync: Parting | None = None  # where the ranks' collectives parted and the backend raised no error
    ranks: list[RankRecord] = field(default_factory=list)

    def __post_init__(self) -> None:
        _describe_built_in(self)

    def to_json(self) -> str:
        return json.dumps(msgspec.to_builtins(self, enc_hook=as_text), indent=2)

    @classmethod
    def from_json(cls, text: str | bytes) -> RunRecord:
        """Raises ValueError for text that is not a run record (one written before the job was one value upgraded)."""
        try:
            data = msgspec.json.decode(text)
            if not isinstance(data, dict):
                raise ValueError("not a run record")
            return msgspec.convert(upgraded(data), cls, dec_hook=_decode)
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
            failure=self.failure,
            steps_completed=self.steps_completed,
            clock_offsets=self.clock_offsets,
            ddp={str(r.rank): r.ddp for r in self.ranks},
            peak_gpu_memory_mb={str(r.rank): r.peak_memory_mb for r in self.ranks if "allocated" in r.peak_memory_mb},
            peak_rss_mb={str(r.rank): r.peak_memory_mb["rss"] for r in self.ranks if "rss" in r.peak_memory_mb},
            tf32=self.tf32,
            script=self.script,
            job=self.job,
            compiled=self.compiled,
            notes=self.notes,
            script_notes=self.script_notes,
            desync=self.desync,
            link_probe=self.link_probe,
            link_tiers=self.link_tiers,
            cast_costs=self.cast_costs,
            rank_hosts={str(r.rank): r.host for r in self.ranks if r.host},
            joined_steps={str(r.rank): r.joined_steps for r in self.ranks if r.joined_steps},
            optimizer=self.optimizer,
            parameter_sizes=self.parameter_sizes or _ddp_sizes(self.job),
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
    failure: Failure | None = None
    steps_completed: int | None = None
    clock_offsets: list[ClockOffset] = field(default_factory=list)
    ddp: dict[str, dict[str, Any]] = field(default_factory=dict)  # per rank: DDP's own logging data
    peak_gpu_memory_mb: dict[str, dict[str, float]] = field(default_factory=dict)  # per rank: allocated, reserved
    peak_rss_mb: dict[str, float] = field(default_factory=dict)  # per CPU rank
    tf32: dict[str, bool] | None = None
    script: list[str] | None = None
    job: Job = field(default_factory=Job)  # what the run built
    compiled: Compiled | None = None
    notes: list[str] = field(default_factory=list)
    script_notes: ScriptNotes | None = None
    desync: Parting | None = None
    link_probe: list[ProbedSize] = field(default_factory=list)
    link_tiers: list[ProbedTier] = field(default_factory=list)
    cast_costs: list[CastCost] = field(default_factory=list)
    rank_hosts: dict[str, str] = field(default_factory=dict)  # rank -> the host it ran on
    # rank -> the steps it shadowed under Join, its inputs run out (uneven inputs); only ranks that did
    joined_steps: dict[str, int] = field(default_factory=dict)
    optimizer: str | None = None  # the optimizer whose steps are the steps (a script's)
    parameter_sizes: list[int] | None = None  # bytes per parameter, registration order

    def __post_init__(self) -> None:
        _describe_built_in(self)

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
        if not self.script:  # commprof's own model: the options of its strategy as given
            options = config.options
            shown = {f.name: str(getattr(options, f.name)) for f in dataclasses.fields(options)}
            defaults = {f.name: str(f.default) for f in dataclasses.fields(options)}
        else:
            shown, defaults = {"script": " ".join(self.script)}, {}
            for engine in self.job.of(BuiltDeepSpeed)[:1]:  # the first DeepSpeed engine: the one measured
                ran = {"deepspeed": engine.zero_stage, **engine.settings}
                shown |= {
                    name: f"{value} (commprof's)" if _APPLIED_AS.get(name, name) in engine.applied else str(value)
                    for name, value in ran.items()
                }
                shown["deepspeed"] = f"ZeRO stage {shown['deepspeed']}"
            for hvd in self.job.of(BuiltHorovod)[:1]:  # Horovod's, as its ranks had it
                fusion, cycle = "HOROVOD_FUSION_THRESHOLD", "HOROVOD_CYCLE_TIME"
                shown["horovod"] = (
                    f"fusion buffer {hvd.fusion_threshold_bytes / 2**20:g} MiB"
                    + (" (commprof's)" if fusion in hvd.applied else "")
                    + f", cycle {hvd.cycle_time_ms:g} ms"
                    + (" (commprof's)" if cycle in hvd.applied else "")
                )
            sharded_models = self.job.of(BuiltFSDP)
            for sharded in sharded_models[:1]:  # the script's fully_shard, as written and with commprof's on top
                units, models = sum(len(b.units) for b in sharded_models), len(sharded_models)
                shown["fsdp"] = f"{units} fully_shard units" + (f" in {models} models" if models > 1 else "")
                for name in ("reshard_after_forward", "forward_prefetch", "backward_prefetch", "reduce_dtype"):
                    if name in sharded.applied:
                        shown[name] = f"{sharded.applied[name]} (commprof's)"
                    elif sharded.asked.get(name) is not None:
                        shown[name] = str(sharded.asked[name])
                shown.setdefault("reshard_after_forward", "FSDP's default")
            ddps = self.job.of(BuiltDDP)
            for built in ddps:  # each DDP the script built, by its name where it built several
                whose = f"{built.label}." if len(ddps) > 1 else ""
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


def _describe_built_in(run: RunRecord | RunSummary) -> None:
    """A built-in model's run (no script) described as a script's is, from its config: one instance built by
    commprof (older records and reports have none)."""
    if not (run.script or run.config.script) and all(b.built_by == "commprof" for b in run.job.built):
        job = built_in(run.config, run.model, run.parameters, run.parameter_sizes)
        object.__setattr__(run, "job", job)


def _ddp_sizes(job: Job) -> list[int] | None:
    first = job.first(BuiltDDP)
    return first.parameter_sizes if first else None


_APPLIED_AS = {"deepspeed": ZERO_CONFIG_NAMES["zero_stage"]}  # the settings line's name -> DeepSpeed's config's


def _decode(kind: type, obj: Any) -> Any:
    if kind is Path:
        return Path(obj)
    raise NotImplementedError(kind)
