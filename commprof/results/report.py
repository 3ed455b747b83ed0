"""The Report of a run, an analysis, a sweep or a tune: numbers only, re-rendered without the traces.

Documented field by field in docs/report-schema.md. Loading (results.store) fills defaults for
fields that a newer commprof added, so old reports keep rendering.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from commprof.results.common import SCHEMA_VERSION, Estimate, Result
from commprof.results.finding_facts import FACTS_OF, FindingFacts
from commprof.results.groups import DimensionTime, StageWait
from commprof.results.network import Network
from commprof.results.rank_facts import ShortWindow, Unfinished
from commprof.results.run_record import RunSummary
from commprof.results.whole_run import WholeRun


@dataclass(frozen=True)
class Stat:
    median: float
    p95: float
    mean: float


@dataclass(frozen=True)
class PhaseShare:
    """One phase of a step (forward, backward, optimizer): its window and what happened in it, in ms. overlap: the
    communication hidden behind computation; exposed: the rest."""

    phase: str
    window_ms: float
    compute_ms: float
    comm_ms: float
    overlap_ms: float
    exposed_comm_ms: float


@dataclass(frozen=True)
class ModuleGathers:
    """FSDP's parameter all-gathers for one module in one phase, per step (ms): exposed is the part no computation
    hid, the time the block waited for its parameters."""

    module: str
    phase: str | None
    calls_per_step: float
    ms: float
    exposed_ms: float


@dataclass(frozen=True)
class StepBreakdown:
    rank: int
    step: str
    window_ms: float
    compute_ms: float
    comm_ms: float
    overlap_ms: float
    exposed_comm_ms: float
    idle_ms: float
    memory_ms: float
    carried_over_ms: float = 0.0  # GPU: device work from before the step still running in its window
    start_idle_ms: float = 0.0  # from the step's start to its first computation, communication or copy
    phases: list[PhaseShare] = field(default_factory=list)  # [] when the trace marks no backward in the step
    # backward passes before the optimizer: the micro-steps that make this step (None when it has no phases)
    micro_steps: int | None = None


@dataclass(frozen=True)
class RankSummary:
    """Per rank. Components are means over steps, so compute + exposed + memory_only + idle = step_time_ms.mean."""

    rank: int
    kind: str
    steps: int
    step_time_ms: Stat
    compute_ms: float
    comm_ms: float
    overlap_ms: float
    exposed_comm_ms: float
    idle_ms: float
    memory_ms: float
    comm_compute_ratio: float | None
    exposed_fraction: float
    host: str | None = None
    carried_over_ms: float = 0.0  # GPU: device work from before the step still running in its window

    @property
    def memory_only_ms(self) -> float:
        """memcpy/memset time under neither computation nor communication."""
        return max(0.0, self.step_time_ms.mean - self.compute_ms - self.exposed_comm_ms - self.idle_ms)


@dataclass(frozen=True)
class CollectiveStep:
    """One collective kind and size in one profiled step: the mean over every rank's calls in that step."""

    step: str
    mean_ms: float
    busbw_gbps: float | None


@dataclass(frozen=True)
class CollectiveStats:
    op: str
    backend: str
    dtype: str | None
    bytes: int | None
    group_size: int | None
    count: int
    calls_per_step: float
    mean_ms: float
    algbw_gbps: float | None
    busbw_gbps: float | None
    steps: list[CollectiveStep] = field(default_factory=list)  # in step order
    phase: str | None = None  # "forward", "backward", "optimizer": when in the step it was launched
    purpose: str | None = None  # what it is for, when the trace says ("parameter all-gather", ...)
    hidden_pct: float | None = None  # of its calls' time, the share with computation running on the same rank
    # the process group that ran it: its mesh dimension ("tp"), else its description ("world"); None: not known
    group: str | None = None
    group_ranks: list[list[int]] = field(default_factory=list)  # that dimension's groups' members, global ranks


@dataclass(frozen=True)
class RankSkew:
    """One rank's side of the matched collectives: waiting for others vs moving data."""

    rank: int
    clock_offset_us: float  # added to this rank's times to put them on rank 0's clock
    wait_ms: float  # per step: arrived early and waited for the last rank
    transfer_ms: float  # per step: from the last rank's arrival to the end
    last_arrivals: int  # matched collectives where this rank arrived last
    median_step_ms: float
    wait_caused_ms: float = 0.0  # per step: the others' mean wait at the collectives where this rank arrived last


@dataclass(frozen=True)
class Clocks:
    """How the ranks' clocks were aligned (analysis/crossrank): `how` is "one host" (no correction needed),
    "measured" (the offsets of `hosts` hosts measured at start by round trips to rank 0, each good to `error_us`) or
    "collectives" (`hosts` hosts aligned on the ends of matched synchronising collectives, against rank
    `reference`); `said`: an older report's words for it."""

    how: str
    hosts: int = 1
    error_us: float = 0.0
    reference: int = 0
    said: str = ""


@dataclass(frozen=True)
class CrossRank:
    ranks: list[RankSkew]
    matched_collectives: int
    alignment: Clocks
    straggler: int | None  # the rank whose late arrivals cost the others the most waiting
    straggler_late_ms: float  # mean, over the collectives where it arrived last, of the others' mean wait for it
    step_spread_ms: float  # slowest minus fastest median step time
    slowest_rank: int
    straggler_cost_ms: float = 0.0  # per step: the others' waiting it causes (its wait_caused_ms)
    straggler_ops: dict[str, float] = field(default_factory=dict)  # op -> that waiting per step, largest first
    unmatched_calls: int = 0  # collective calls no other rank's call matched (send/recv without a named peer too)
    straggler_steps: dict[str, float] = field(default_factory=dict)  # profiled step -> the others' wait for it, ms
    costliest: list[int] = field(default_factory=list)  # the ranks that cost the others any wait, costliest first


@dataclass(frozen=True)
class BucketEvent:
    """One gradient bucket in one backward pass; times in ms from the start of the backward pass."""

    index: int
    bytes: int | None
    ready_ms: float
    start_ms: float
    end_ms: float


@dataclass(frozen=True)
class DDPCrossCheck:
    """DDP's own averages (_get_ddp_logging_data) next to the same figures taken from the trace."""

    ddp_backward_compute_ms: float | None
    ddp_backward_comm_ms: float | None
    ddp_overlap_ms: float | None
    trace_backward_compute_ms: float | None
    trace_backward_comm_ms: float | None
    trace_overlap_ms: float | None


@dataclass(frozen=True)
class SettingResult:
    label: str
    options: dict[str, Any]  # the setting's options by name: DDP's (bucket_cap_mb, ...) or FSDP's
    buckets: int
    bucket_sizes: list[int]  # bytes, as DDP built them after its first iteration
    step_ms: Estimate  # median of the job's step time (slowest rank per step) and its 95% CI
    samples: int
    speedup: Estimate  # baseline / this, with a 95% CI; > 1 is faster (a script's: paired launches, launch_stats)
    significant: bool  # the speedup's CI excludes 1 and it changes the step by stats.PRACTICAL_SHARE or more
    exposed_comm_ms: float
    overlap_pct: float  # share of communication hidden behind computation
    allreduce_calls_per_step: float
    traces: str
    gathers_per_step: float = 0.0  # FSDP's parameter all-gathers
    timeline: list[BucketEvent] = field(default_factory=list)
    ddp_check: DDPCrossCheck | None = None
    best: bool = False
    gain_ms: Estimate | None = None  # median(baseline) - median(this) per step, with its 95% CI; > 0 is faster
    predicted_gain_ms: Estimate | None = None  # `commprof advise`: what the finding predicted for this setting
    launches: int = 0  # a script's: its timed launches (its step: their geometric mean); 0: a built-in model's

    def same_buckets(self, other: SettingResult) -> bool:
        """Differs from `other` in bucket_cap_mb alone and DDP built the same buckets: one setting twice."""

        def rest(s: SettingResult) -> dict[str, Any]:
            return {k: v for k, v in s.options.items() if k != "bucket_cap_mb"}

        return bool(self.bucket_sizes) and self.bucket_sizes == other.bucket_sizes and rest(self) == rest(other)


@dataclass(frozen=True)
class ConfirmedClaim:
    """A script's claimed setting measured again against the baseline in fresh interleaved pairs of launches."""

    setting: str
    pairs: int
    speedup: Estimate  # baseline / setting over the fresh pairs alone
    gain_ms: Estimate
    held: bool  # it beats the baseline there too (launch_stats.beats): only then is it recommended


@dataclass(frozen=True)
class Verdict:
    """What a sweep's measurements call for (analysis/sweep.recommend); render/verdict_words.py says it. `outcome`:
    "same_options" (the fastest ran the baseline's options), "same_buckets" (it built the baseline's buckets),
    "barely_matters" (no setting differs beyond the noise, either way: within ±`spread_pct`; `knob_only`: the
    settings varied the kind's bucket size alone), "baseline_fastest", "no_better" (none beyond the noise and the
    practical share), "did_not_hold" (the named setting lost in fresh launches: SweepResult.confirmed) or "best"
    (the sweep's `best` is recommended; `fastest`: the fastest measured, where a larger size is named instead)."""

    outcome: str
    fastest: str
    own: bool  # the baseline is a script's own setting, the script as written
    framework: str = "script"  # what built the job: the paste line's terms
    spread_pct: float = 0.0
    knob_only: bool = False


@dataclass(frozen=True)
class SweepResult:
    kind: str  # "sweep", "tune" or "advise"
    baseline: str
    best: str
    settings: list[SettingResult]
    recommendation: str = ""  # the verdict's words, written into report.json for its readers (render/)
    paste: str | None = None  # e.g. "DDP(model, bucket_cap_mb=10)"; None when the baseline is as good (render/)
    rounds: int = 1
    timings: dict[str, float] = field(default_factory=dict)
    strategy: str = "ddp"  # whose settings: "ddp" or "fsdp"
    confirmed: ConfirmedClaim | None = None  # a script's claim, measured again before it is recommended
    verdict: Verdict | None = None  # None: a report written before verdicts were facts (its words only)


@dataclass(frozen=True)
class StepTimeline:
    """One step of one rank, for drawing: merged intervals in ms from the step's start."""

    rank: int
    step: str
    window_ms: float
    compute: list[list[float]]
    communication: list[list[float]]


@dataclass(frozen=True)
class ProfilerDistortion:
    """One rank's median step inside the profiled window and outside it (wall clock, run.json)."""

    rank: int
    profiled_ms: float
    unprofiled_ms: float
    slowdown: float  # profiled / unprofiled - 1


@dataclass(frozen=True)
class JobStep:
    """The job's step, its slowest rank's at each step (DDP waits for it): the median inside the profiler's active
    window and over the steps it did not touch (wall clock, run.json). The one figure of each that every report
    quotes: the headline, the profiler's line, its finding, the whole run's window, compare and diff."""

    profiled_ms: float
    unprofiled_ms: float

    @property
    def slowdown(self) -> float:
        """The profiler's own cost: profiled / unprofiled - 1."""
        return self.profiled_ms / self.unprofiled_ms - 1 if self.unprofiled_ms > 0 else 0.0


@dataclass(frozen=True)
class ModelAccount:
    """One model a script built (analysis/models.py): a DistributedDataParallel, or an FSDP root with its units; with
    its own collectives per profiled step: those whose size only its buckets or units have."""

    name: str  # what the script passes to DDP ("discriminator"), else its module's class
    module: str
    parameters: int
    built_at: str = ""  # "train_gan.py:23"
    built_by: str = "script"
    bucket_cap_mb: float | None = None  # as it ran; None: DDP's default
    commprofs: list[str] = field(default_factory=list)  # the DDP arguments commprof set on it
    buckets: list[int] = field(default_factory=list)  # bytes, as DDP builds them for its cap
    calls_per_step: float = 0.0
    ms_per_step: float = 0.0  # its all-reduces' time per step, each call's whole duration
    bytes_per_step: float = 0.0
    shared_calls_per_step: float = 0.0  # collectives of a size several models' buckets have: told apart by none
    kind: str = "DDP"  # or "FSDP", "ZeRO"
    # False: its collectives are not told from the other models' (ZeRO's buckets hold no model's own sizes)
    told_apart: bool = True
    zero: dict[str, Any] = field(default_factory=dict)  # ZeRO: its stage and zero_optimization settings as it ran
    units: list[int] = field(default_factory=list)  # FSDP: the parameters each unit holds, the root last
    fsdp: dict[str, Any] = field(default_factory=dict)  # FSDP: its options as it ran, by FSDPOptions' names


@dataclass(frozen=True)
class Finding:
    """One thing to change, ranked by its predicted gain, or a note: its kind's facts (results/finding_facts.py,
    decided by analysis/finding_kinds.py's detectors), the gain per step with its 95% interval (None for a note), and
    the setting `commprof advise` runs. Its words (title, evidence, the line to act on) are render/'s: report.json
    holds them too, for its readers, made as it is written (render/finding_words.with_words)."""

    kind: str  # one of finding_facts.FACTS_OF
    facts: FindingFacts | None = None  # None: a report written before findings held their facts (their words only)
    gain_ms: Estimate | None = None
    gain_pct: float | None = None  # of the job's step without the profiler (else the profiled median step)
    setting: dict[str, Any] = field(default_factory=dict)  # what `commprof advise` runs: {"bucket_cap_mb": 50}
    model: str | None = None  # the DDP model of a script with several that the finding is for (ModelAccount.name)
    title: str = ""
    evidence: str = ""
    action: str = ""

    def __post_init__(self) -> None:
        if self.kind not in FACTS_OF or (self.facts is not None and type(self.facts).KIND != self.kind):
            raise ValueError(f"unknown kind of finding {self.kind!r}")


@dataclass(frozen=True)
class SkippedFileInfo:
    path: str
    reason: str


@dataclass(frozen=True)
class Report(Result):
    name: str
    kind: str  # "run", "analysis", "sweep", "tune" or "advise"
    created: str
    sources: list[str]
    ranks: list[RankSummary]
    collectives: list[CollectiveStats]
    steps: list[StepBreakdown] = field(default_factory=list)
    run: RunSummary | None = None  # when commprof made the traces: from their run.json
    skipped: list[SkippedFileInfo] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    cross_rank: CrossRank | None = None
    sweep: SweepResult | None = None
    timeline: StepTimeline | None = None
    # a run that failed or was interrupted: the steps the report covers; None: it completed
    unfinished: Unfinished | None = None
    incomplete: str | None = None  # the same in words, written into report.json for its readers (render/)
    missing_ranks: list[int] = field(default_factory=list)  # ranks of the job with no trace here
    profiler_distortion: list[ProfilerDistortion] = field(default_factory=list)  # commprof's runs only
    job_step: JobStep | None = None  # commprof's runs with steps inside and outside the profiler's window
    # GPU ranks: ProfilerSteps that launched no device work, by rank (listed, not counted as steps)
    empty_steps: dict[str, list[str]] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)  # ranked, largest predicted gain first
    within_noise: list[Finding] = field(default_factory=list)  # what was weighed and not claimed, ranked likewise
    # the kinds of finding weighed (analysis/finding_kinds.weighed); None: a report written before it said
    checked: list[str] | None = None
    phases: list[PhaseShare] = field(default_factory=list)  # per phase, the mean over every rank's steps
    # micro-steps (backward passes) per step, the median over every rank's steps with phases; None: none has
    micro_steps: int | None = None
    gathers: list[ModuleGathers] = field(default_factory=list)  # FSDP runs: all-gathers by module, most exposed first
    models: list[ModelAccount] = field(default_factory=list)  # a script's DDP models, each with its own all-reduces
    whole_run: WholeRun | None = None  # every step of the run, from the ranks' whole-run records (commprof's runs)
    network: Network | None = None  # hosts, links per tier and the collectives on them (commprof's runs)
    # per dimension of the job's device mesh (or process group), where its collectives ran over more than one
    dimensions: list[DimensionTime] = field(default_factory=list)
    pipeline: list[StageWait] = field(default_factory=list)  # a pipeline's stages, where the job has a "pp" dimension
    short_window: ShortWindow | None = None  # a script that ended inside the profiled window
    schema_version: int = SCHEMA_VERSION
