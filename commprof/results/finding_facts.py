"""The facts of each kind of finding, as the report holds them: analysis/ decides them (its detectors,
analysis/finding_kinds.py), render/finding_words.py says them. One type per kind, each naming its kind (`KIND`);
`FindingFacts` is their union, and a finding's `kind` says which of them its `facts` are (docs/report-schema.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from commprof.results.rank_facts import InputStall, Stalls, Straggler
from commprof.settings import DDPOptions, FSDPOptions


@dataclass(frozen=True)
class LinkSource:
    """Where a link model's bandwidth and latency come from: `how` is "probe" (all-reduces of `smallest` to `largest`
    bytes timed alone after training), "fitted" (to `calls` measured all-reduces at `ranks` ranks), "timed" (to
    `calls` all-reduce sizes timed alone after a scale's runs), "given" (--link `given`), "bench" (`commprof bench`'s
    ceiling, `given` naming which), or "what-if"."""

    how: str
    calls: int = 0
    ranks: list[int] = field(default_factory=list)
    smallest: int = 0
    largest: int = 0
    given: str = ""


@dataclass(frozen=True)
class Link:
    """The link a finding's model ran on."""

    bandwidth_gbps: float
    alpha_us: float
    source: LinkSource


@dataclass(frozen=True)
class SlowCollectives:
    """All-reduce sizes far below the link's bandwidth (analysis/bucket_findings.slow_collectives)."""

    KIND: ClassVar[str] = "slow_collectives"
    sizes: list[tuple[int, float]]  # (bytes, bus bandwidth GB/s) of each slow size
    top_gbps: float  # what large messages reach on this link
    top: LinkSource  # where that comes from
    alpha_us: float  # the link's latency per ring step
    reach_bytes: float  # the message that reaches 80% of the link
    gradient_bytes: int


@dataclass(frozen=True)
class BucketCap:
    """The bucket_cap_mb the bucket model predicts fastest (analysis/bucket_findings.bucket_cap)."""

    KIND: ClassVar[str] = "bucket_cap"
    cap_mb: float
    buckets_then: list[int]  # bytes per bucket at that cap
    buckets_now: list[int]
    cap_now: float | None  # None: DDP's default
    exposed_ms: float
    link: Link
    serial: bool  # CPU ranks: every all-reduce counted in full
    as_good: list[float]  # other caps within the best one's interval
    options: DDPOptions  # the setting, in the script's terms
    framework: str
    model: str | None = None  # of a script with several DDP models
    slow: SlowCollectives | None = None  # slow all-reduces, its evidence where it stands


@dataclass(frozen=True)
class ZeroBuckets:
    """The reduce_bucket_size the bucket model predicts fastest for ZeRO (analysis/zero_findings)."""

    KIND: ClassVar[str] = "zero_buckets"
    size: float  # elements
    own: float
    calls_now: int
    calls_then: int
    stage: int
    exposed_ms: float
    link: Link
    serial: bool


@dataclass(frozen=True)
class FsdpReshard:
    """reshard_after_forward=False (analysis/fsdp_findings.resharding)."""

    KIND: ClassVar[str] = "fsdp_reshard"
    gathers_per_step: float
    kept_bytes: float  # held more per rank between forward and backward
    serial: bool
    options: FSDPOptions
    dimension: str | None = None  # the mesh dimension FSDP shards over, on a job of several


@dataclass(frozen=True)
class HorovodFusion:
    """A larger HOROVOD_FUSION_THRESHOLD (analysis/horovod_findings.horovod_fusion)."""

    KIND: ClassVar[str] = "horovod_fusion"
    threshold_bytes: float
    own_bytes: float
    calls_now: float
    calls_then: float
    exposed_ms: float
    steps: int  # the training steps replayed
    untouched: bool  # those the profiler did not touch
    step_ms: float  # their median
    bandwidth_gbps: float
    measured: bool  # the link probed, not fitted


@dataclass(frozen=True)
class Compression:
    """fp16 or bf16 gradient compression (analysis/setting_findings.compression)."""

    KIND: ClassVar[str] = "compression"
    hook: str  # "fp16" or "bf16"
    dtype: str
    casts_measured: bool
    saved_ms: float  # what the halved bytes save per step
    float_gbps: float
    halved_gbps: float | None  # the 16-bit all-reduces' link, where timed
    largest_bytes: int = 0
    largest_cast_us: float = 0.0
    casts_ms: float = 0.0  # per step
    buckets: int = 0
    net_ms: float = 0.0
    others: dict[str, float] = field(default_factory=dict)  # the other hook's net gain
    bf16_weighed: bool = True
    options: DDPOptions = field(default_factory=DDPOptions)
    framework: str = "script"


@dataclass(frozen=True)
class Accumulation:
    """Accumulating micro-batches under no_sync (analysis/setting_findings.accumulation)."""

    KIND: ClassVar[str] = "accumulation"
    factor: int
    micro_batches: int  # per step, proposed (accumulation)
    paid_ms: float  # the communication every step pays
    serial: bool
    samples_per_step: int | None  # per rank, where known
    batch_size: int | None  # commprof's own model's, where the run set it
    share: float = 0.0  # of the step, paid in communication (the median over the profiled steps)
    share_low: float = 0.0  # the interval a rerun's share falls in
    share_high: float = 0.0
    bound: float = 0.0  # the share above which it is advised (setting_findings.COMMUNICATION_BOUND)
    near_bound: bool = False  # the bound lies inside that interval: a rerun may fall on its other side
    options: DDPOptions = field(default_factory=DDPOptions)
    framework: str = "script"


@dataclass(frozen=True)
class ProfilerDistortion:
    """The profiler slowed the steps it recorded (analysis/distortion.large_slowdown)."""

    KIND: ClassVar[str] = "profiler_distortion"
    slowdown: float


@dataclass(frozen=True)
class LargerBatch(Accumulation):
    """A larger per-rank batch: Accumulation's facts, `factor` times the batch."""

    KIND: ClassVar[str] = "batch"


FindingFacts = (
    BucketCap
    | SlowCollectives
    | ZeroBuckets
    | FsdpReshard
    | HorovodFusion
    | Compression
    | Accumulation
    | LargerBatch
    | InputStall
    | Straggler
    | Stalls
    | ProfilerDistortion
)
FACTS_OF: dict[str, type] = {t.KIND: t for t in FindingFacts.__args__}
