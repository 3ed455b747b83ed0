"""The whole-run record: every optimizer step of one rank, from the first to the last, at a fixed size.

Written by each rank beside its trace (`rank<N>.ledger.json`, instrument/step_ledger.py records it without the
profiler); read by the analysis (analysis/whole_run.py). However long the run, a rank's record keeps:
- `blocks`: every step summed into blocks of `block_steps` consecutive steps. block_steps starts at 1 (a run of up
  to MAX_BLOCKS steps keeps each step's figures) and doubles, adjacent blocks merged, whenever there would be more
  than MAX_BLOCKS: a run of 100,000 steps keeps 391 blocks of 256 steps;
- `recent`: the last RECENT steps in full, each collective with its op, bytes, start and duration;
- `slowest`: the SLOWEST slowest steps of the whole run in full;
- `window`: the profiled steps in full (at most MAX_WINDOW), to compare the window with the run;
- `histogram`: every step time counted in bins 5% wide, from which the run's median step and the number of steps
  over any multiple of it are read.
At most MAX_CALLS collectives are kept per step (the others are counted in `calls_dropped`), so the file's size has an
upper bound (`UPPER_BYTES`, checked by tests/test_step_ledger.py) whatever the run's length."""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from commprof.results.by_rank import read_by_rank

MAX_BLOCKS = 512
RECENT = 1024
SLOWEST = 128
MAX_WINDOW = 256
MAX_CALLS = 64
MAX_GROUPS = 16  # per step, and in a rank's record
UPPER_BYTES = 16 * 2**20  # RECENT + SLOWEST + MAX_WINDOW steps of MAX_CALLS calls each, every number at full length
BIN_RATIO = 1.05
BIN_FLOOR_MS = 1e-3
LEDGER_SUFFIX = ".ledger.json"


def ledger_path(run_dir: Path, rank: int) -> Path:
    return run_dir / f"rank{rank}{LEDGER_SUFFIX}"


@dataclass(frozen=True)
class Call:
    """One collective of a step, as the rank saw it: from its launch to its completion."""

    op: str  # e.g. "all_reduce"
    bytes: int
    start_ms: float  # from the start of the step (the previous optimizer step's end)
    duration_ms: float
    group: str = ""  # the name of its process group ("" in records from before issue 70)


@dataclass(frozen=True)
class GroupTime:
    """One process group's collectives in a step: the time one of them was in flight (their union), and how many."""

    group: str
    comm_ms: float
    calls: int


@dataclass(frozen=True)
class LedgerGroup:
    """A process group the rank communicated over: its description (a mesh dimension's "mesh_tp") and members."""

    desc: str
    ranks: list[int]


@dataclass(frozen=True)
class StepEntry:
    step: int  # optimizer step, from 1
    step_ms: float  # the previous optimizer step's end to this one's
    comm_ms: float = 0.0  # time with at least one collective in flight (their union), all calls counted
    bytes: int = 0  # all calls counted
    calls: tuple[Call, ...] = ()  # the first MAX_CALLS
    calls_dropped: int = 0  # beyond MAX_CALLS
    # from the rank's last gradient ready (its backward's end, DDP's own timers) to its all-reduces' end; 0 where not
    # timed. Every rank's last all-reduce ends together: the rank whose gradients were ready last has the shortest
    tail_ms: float = 0.0
    # the time the rank's training thread was ready to run but waited for a core (the kernel's schedstat run delay):
    # something else ran on its core then; 0 where not measured
    core_wait_ms: float = 0.0
    groups: tuple[GroupTime, ...] = ()  # each group's time in flight, all calls counted

    @classmethod
    def of(
        cls, step: int, step_ms: float, calls: tuple[Call, ...] = (), tail_ms: float = 0.0, core_wait_ms: float = 0.0
    ) -> StepEntry:
        return cls(
            step,
            step_ms,
            in_flight_ms(calls),
            sum(c.bytes for c in calls),
            calls[:MAX_CALLS],
            len(calls[MAX_CALLS:]),
            tail_ms,
            core_wait_ms,
            by_group(calls),
        )


def by_group(calls: tuple[Call, ...]) -> tuple[GroupTime, ...]:
    """Each group's calls' time in flight, where the calls name their groups."""
    groups: dict[str, list[Call]] = {}
    for call in calls:
        if call.group:
            groups.setdefault(call.group, []).append(call)
    kept = sorted(groups.items())[:MAX_GROUPS]
    return tuple(GroupTime(g, in_flight_ms(tuple(own)), len(own)) for g, own in kept)


def in_flight_ms(calls: tuple[Call, ...]) -> float:
    """Time with at least one of the calls in flight: the union of their intervals."""
    total, reach = 0.0, -math.inf
    for call in sorted(calls, key=lambda c: c.start_ms):
        end = call.start_ms + call.duration_ms
        if end > reach:
            total += end - max(call.start_ms, reach)
            reach = end
    return total


@dataclass(frozen=True)
class Block:
    """`steps` consecutive steps from `first`, summed."""

    first: int
    steps: int
    step_ms_sum: float
    step_ms_max: float
    slowest: int  # the step of step_ms_max
    comm_ms_sum: float
    calls: int
    bytes: int

    def merged(self, other: Block) -> Block:
        slower = other.step_ms_max > self.step_ms_max
        return Block(
            first=self.first,
            steps=self.steps + other.steps,
            step_ms_sum=self.step_ms_sum + other.step_ms_sum,
            step_ms_max=max(self.step_ms_max, other.step_ms_max),
            slowest=other.slowest if slower else self.slowest,
            comm_ms_sum=self.comm_ms_sum + other.comm_ms_sum,
            calls=self.calls + other.calls,
            bytes=self.bytes + other.bytes,
        )


@dataclass(frozen=True)
class RankLedger:
    rank: int
    host: str
    timed_by: str  # what timed the collectives (docs/semantics.md, Whole run); "" when none were timed
    steps: int = 0  # steps recorded
    block_steps: int = 1
    blocks: tuple[Block, ...] = ()
    recent: tuple[StepEntry, ...] = ()
    slowest: tuple[StepEntry, ...] = ()
    window: tuple[StepEntry, ...] = ()  # the profiled steps, in full wherever they fall
    histogram: dict[int, int] = field(default_factory=dict)  # bin -> steps; bin b holds BIN_FLOOR_MS * BIN_RATIO**b
    groups: dict[str, LedgerGroup] = field(default_factory=dict)  # by name: the groups its collectives ran over
    clock_ms: float = 0.0  # the whole run's clock's own work over the run (instrument/collective_clock.py)

    def entries(self) -> dict[int, StepEntry]:
        """The steps kept in full, by step."""
        return {e.step: e for e in (*self.window, *self.slowest, *self.recent)}

    def steps_over(self, ms: float) -> int:
        """How many of the run's steps took longer than `ms` (to the histogram's 5%)."""
        return sum(n for b, n in self.histogram.items() if bin_floor_ms(b) >= ms)


def bin_of(ms: float) -> int:
    return max(0, int(math.log(max(ms, BIN_FLOOR_MS) / BIN_FLOOR_MS) / math.log(BIN_RATIO)))


def bin_floor_ms(b: int) -> float:
    return BIN_FLOOR_MS * BIN_RATIO**b


def quantile_ms(histogram: dict[int, int], q: float) -> float:
    """The q-quantile of the counted times: the geometric middle of its bin."""
    total = sum(histogram.values())
    if not total:
        return 0.0
    seen = 0
    for b in sorted(histogram):
        seen += histogram[b]
        if seen >= q * total:
            return bin_floor_ms(b) * math.sqrt(BIN_RATIO)
    return bin_floor_ms(max(histogram)) * math.sqrt(BIN_RATIO)


class LedgerBuilder:
    """A rank's record as its steps come, never larger than its bounds."""

    def __init__(self, rank: int, host: str, timed_by: str, window: tuple[int, int] | None = None):
        """`window`: the first and last profiled step, kept in full (at most RECENT of them)."""
        self.rank, self.host, self.timed_by = rank, host, timed_by
        self.keep = window
        self.window: list[StepEntry] = []
        self.steps = 0
        self.block_steps = 1
        self.blocks: list[Block] = []
        self.recent: list[StepEntry] = []
        self.slowest: list[tuple[float, int, StepEntry]] = []  # a heap: the fastest of the slowest first
        self.histogram: dict[int, int] = {}
        self.groups: dict[str, LedgerGroup] = {}
        self.clock_ms = 0.0

    def add(self, entry: StepEntry) -> None:
        self.steps += 1
        self.histogram[bin_of(entry.step_ms)] = self.histogram.get(bin_of(entry.step_ms), 0) + 1
        if self.keep and self.keep[0] <= entry.step <= self.keep[1] and len(self.window) < MAX_WINDOW:
            self.window.append(entry)
        self.recent.append(entry)
        if len(self.recent) > 2 * RECENT:  # trimmed now and then, not at every step
            del self.recent[:-RECENT]
        item = (entry.step_ms, entry.step, entry)
        if len(self.slowest) < SLOWEST:
            heapq.heappush(self.slowest, item)
        elif item[:2] > self.slowest[0][:2]:
            heapq.heapreplace(self.slowest, item)
        self._count(entry)

    def _count(self, entry: StepEntry) -> None:
        block = Block(
            first=entry.step,
            steps=1,
            step_ms_sum=entry.step_ms,
            step_ms_max=entry.step_ms,
            slowest=entry.step,
            comm_ms_sum=entry.comm_ms,
            calls=len(entry.calls) + entry.calls_dropped,
            bytes=entry.bytes,
        )
        last = self.blocks[-1] if self.blocks else None
        if last is not None and last.steps < self.block_steps:
            self.blocks[-1] = last.merged(block)
            return
        self.blocks.append(block)
        if len(self.blocks) > MAX_BLOCKS:
            self.block_steps *= 2
            pairs = zip(self.blocks[0::2], self.blocks[1::2], strict=False)  # an odd last block stays alone
            merged = [a.merged(b) for a, b in pairs]
            self.blocks = merged + ([self.blocks[-1]] if len(self.blocks) % 2 else [])

    def ledger(self) -> RankLedger:
        return RankLedger(
            rank=self.rank,
            host=self.host,
            timed_by=self.timed_by,
            steps=self.steps,
            block_steps=self.block_steps,
            blocks=tuple(self.blocks),
            recent=tuple(self.recent[-RECENT:]),
            slowest=tuple(sorted((e for _, _, e in self.slowest), key=lambda e: e.step)),
            histogram=dict(self.histogram),
            window=tuple(self.window),
            groups=dict(self.groups),
            clock_ms=self.clock_ms,
        )


def encode(ledger: RankLedger) -> bytes:
    return msgspec.json.encode(ledger)


def read_ledgers(run_dir: Path) -> dict[int, RankLedger]:
    """rank -> its record, for every record in `run_dir` that can be read (none for a run made without it)."""
    return read_by_rank(sorted(run_dir.glob(f"rank*{LEDGER_SUFFIX}")), RankLedger)
