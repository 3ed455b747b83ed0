"""Plain records produced by the trace loader: one RankTrace per file, a RunTrace per set."""

from __future__ import annotations

from dataclasses import dataclass, field

Interval = tuple[float, float]  # (start, end) in microseconds, in the file's own time base


@dataclass(frozen=True)
class Step:
    name: str
    start: float
    end: float
    # GPU traces: device time inside this window of work the step did not launch (still running from before)
    carried_over_us: float = 0.0


@dataclass(frozen=True)
class PhaseMarks:
    """Where one ProfilerStep changes phase, by what ran: each backward pass from its first backward op, the next
    micro-step's forward from the pass's last backward op's end, the optimizer from Optimizer.step (roles.phase_marks).
    The step begins in the forward."""

    step: str  # the ProfilerStep's name
    passes: int  # backward passes before the optimizer: the micro-steps that make the step
    changes: tuple[tuple[str, float], ...]  # (phase, from when) in order, on the timeline of RankTrace.steps


@dataclass(frozen=True)
class DeviceView:
    """A GPU rank as Holistic Trace Analysis sees it: one window, and only the device work it keeps."""

    window: Interval
    compute: tuple[Interval, ...]
    communication: tuple[Interval, ...]
    other: tuple[Interval, ...]  # memcpy, memset, syncs: busy, neither computation nor communication


@dataclass(frozen=True)
class Collective:
    """One execution of a collective on one rank (a GPU kernel or a gloo:/mpi: range)."""

    op: str
    backend: str
    start: float
    end: float
    nbytes: int | None = None
    dtype: str | None = None
    group_size: int | None = None
    process_group: str | None = None
    lane: str = ""  # stream or thread it ran on
    # when it could start: on CPU traces its launch; on GPU traces the end of the device work launched before
    # it (a GPU time, like start and end). For DDP: when the bucket became ready.
    ready: float | None = None
    peer: int | None = None  # send/recv: the global rank at the other end, when the trace names it
    sends: bool | None = None  # send/recv: True for a send, False for a recv
    phase: str | None = None  # when it was launched: "forward", "backward" or "optimizer" (rules.PHASES)
    purpose: str | None = None  # what it is for, when the trace says: "parameter all-gather" (FSDP), ...
    module: str | None = None  # the module it serves, when the trace says (FSDP's label)
    step: int | None = None  # the training step it served, when the trace numbers them (Horovod's timeline)


@dataclass(frozen=True)
class ProcessGroup:
    """A process group as a trace names it (distributedInfo.pg_config): its name (the same on every rank), its
    description (a DeviceMesh dimension's group: "mesh_dp"; "default_pg") and its members, as global ranks."""

    name: str
    desc: str
    ranks: tuple[int, ...]


@dataclass(frozen=True)
class RankTrace:
    path: str
    rank: int
    world_size: int | None
    backend: str | None
    kind: str  # "gpu" (kernels) or "cpu" (operator ranges)
    base_us: float  # add to every time to get epoch microseconds
    steps: tuple[Step, ...]
    compute: tuple[Interval, ...]
    communication: tuple[Interval, ...]
    memory: tuple[Interval, ...]
    collectives: tuple[Collective, ...]
    host: str | None = None
    warnings: tuple[str, ...] = ()
    # GPU only: the trace as HTA sees it (commprof analyze --windows hta)
    hta: DeviceView | None = None
    # GPU only: ProfilerSteps that launched no device work (not steps of the device's timeline)
    empty_steps: tuple[str, ...] = ()
    # per step (same order as steps): start of its last backward pass before the optimizer (under gradient
    # accumulation the micro-step whose backward DDP all-reduces), or None; on GPU traces when the device began
    # the first work launched from then on
    backward_starts: tuple[float | None, ...] = ()
    # per step: end of DDP's last copy of a reduced bucket into the gradients, or None; on GPU traces when
    # the device had finished the work launched up to then
    backward_ends: tuple[float | None, ...] = ()
    # per ProfilerStep: where it changes phase, on the same timeline as `steps` (on GPU traces when the device
    # began the first work launched from then on)
    phase_marks: tuple[PhaseMarks, ...] = ()
    intervals_dropped: bool = False  # compute/communication/memory emptied to save memory (analysis.digest)
    groups: tuple[ProcessGroup, ...] = ()  # the process groups the rank belongs to, as its trace names them


@dataclass(frozen=True)
class SkippedFile:
    path: str
    reason: str


@dataclass(frozen=True)
class RunTrace:
    ranks: tuple[RankTrace, ...]
    skipped: tuple[SkippedFile, ...] = ()
    warnings: tuple[str, ...] = field(default=())
