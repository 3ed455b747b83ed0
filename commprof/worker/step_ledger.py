"""The whole-run record's recorder, in each rank (results/step_ledger.py): every optimizer step's time and its
collectives' bytes, start, duration and process group, without the profiler (docs/semantics.md, Whole run). Every
collective but DDP's buckets is timed at its call by instrument/collective_clock.py; DDP's buckets by one of
two sources, whichever costs the run nothing:
- a DDP on CPU tensors that keeps DDP's own C++ all-reduce is only watched: each step's span, from the first
  bucket's launch to the last one's completion, is read from DDP's own timers (its runtime logging, on for every
  step). A comm hook in its place would cost a pass over the gradients (DDP divides them while copying them into
  its buckets only when there is no hook).
- otherwise (a hook the run has anyway, or CUDA tensors) a DDP comm hook wrapped around the run's own notes when
  each bucket is launched and when its future completes. On CPU tensors the future completes on the backend's
  thread when the collective does, so host clocks time it. On CUDA tensors a future completes when the collective
  is enqueued, so the times are CUDA events: one recorded on the current stream at the launch, one in the future's
  callback (which runs on a stream that waits for the collective); they are read once they have happened, without
  synchronising."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

from commprof.instrument.collective_clock import CollectiveClock, Launch, describe, group_name, standing_aside
from commprof.instrument.entering import EnteringRecord
from commprof.launch.atomic import write_bytes_atomic
from commprof.launch.progress import Every
from commprof.results.step_ledger import (
    MAX_GROUPS,
    Call,
    LedgerBuilder,
    LedgerGroup,
    StepEntry,
    encode,
    ledger_path,
)

HOST_CLOCK = "DDP comm hook futures, host clock"
CUDA_EVENTS = "DDP comm hook, CUDA events"
DDP_TIMERS = "DDP's own timers, one span per step"
CALLS_HOST = "each call, host clock"
CALLS_CUDA = "each call, CUDA events"
CommHook = Callable[[Any, Any], torch.futures.Future]


SCHEDSTAT = Path("/proc/thread-self/schedstat")


def core_wait_ns() -> int:
    """How long this thread has been ready to run but waited for a core, in all (the kernel's run delay, the second
    figure of /proc/thread-self/schedstat); 0 where the kernel does not say."""
    try:
        return int(SCHEDSTAT.read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def bucket_bytes(sizes: str | list[int]) -> int:
    """The bytes of all of DDP's buckets, from its logging data ("1049600, 7357450")."""
    if isinstance(sizes, str):
        return sum(int(size) for size in sizes.replace(",", " ").split() if size.isdigit())
    return sum(sizes)


class TimedHook:
    """A DDP comm hook that times `inner` (called with `state`); both can be replaced after it is registered: a
    script that registers its own hook after commprof registered this one gets its hook timed."""

    def __init__(self, ledger: StepLedger, inner: CommHook | None, state: Any, group: Any = None):
        self.ledger, self.inner, self.state = ledger, inner or default_hooks.allreduce_hook, state
        self.group = ledger.described(group if group is not None else state)
        self.__name__ = self.__qualname__ = f"timed_{getattr(self.inner, '__name__', 'hook')}"  # DDP logs it

    def __call__(self, state, bucket):  # no annotations: DDP checks them and rejects strings
        ledger = self.ledger
        tensor = bucket.buffer()
        launch = Launch("all_reduce", tensor.numel() * tensor.element_size(), ledger.stamp(), self.group)
        ledger.launches.append(launch)

        def done(future):
            launch.end = ledger.stamp()
            return future.value()

        with standing_aside():  # the hook's own all-reduce is this launch
            return self.inner(self.state, bucket).then(done)


class StepLedger:
    """A rank's recorder: `timed(hook)` for each DDP's comm hook; `step_started()` and `step_ended()` around each
    optimizer step; written every 5 s (a live view reads it) and by `finish()`."""

    def __init__(self, run_dir: Path, rank: int, host: str, use_cuda: bool, window: tuple[int, int] | None):
        """`window`: the first and last step the profiler records (kept in full), None when it records none."""
        self.path = ledger_path(run_dir, rank)
        self.use_cuda = use_cuda
        self.builder = LedgerBuilder(rank, host, "", window)
        self.launches: list[Launch] = []
        self.waiting: list[tuple[int, float, Any, list[Launch]]] = []  # CUDA steps whose events are pending
        self.last = time.perf_counter_ns()
        self.last_wall = time.time_ns()  # DDP's own timers are wall-clock stamps
        self.last_core_wait = core_wait_ns()
        self.step_start_event: Any = self._event() if use_cuda else None
        self.watched: Any = None  # a DDP on CPU without a comm hook: its own timers give each step's span
        self.watched_group = ""
        self.seen_comm_start = 0
        # (step, ms, wall start, wall end, core wait ms) awaiting a span
        self.unspanned: list[tuple[int, float, int, int, float]] = []
        self.due = Every(5.0)
        # installed by the session: every other collective, timed, and recorded before it enters the backend
        self.clock = CollectiveClock(self, EnteringRecord.from_environment(rank))
        self.sources: set[str] = set()  # what timed the collectives

    def _event(self) -> Any:
        event = torch.cuda.Event(enable_timing=True)
        event.record()
        return event

    def stamp(self) -> Any:
        """Now: a CUDA event on the current stream, or the host clock (ns)."""
        return self._event() if self.use_cuda else time.perf_counter_ns()

    def group_seen(self, name: str, desc: str, ranks: list[int], by_call: bool = True) -> None:
        """A process group the rank communicated over; `by_call`: seen by the clock, which times each call."""
        if len(self.builder.groups) < MAX_GROUPS:
            self.builder.groups[name] = LedgerGroup(desc, ranks)
        if by_call:
            self._timed_by(CALLS_CUDA if self.use_cuda else CALLS_HOST)

    def described(self, group: Any) -> str:
        """The name of a DDP's process group (the default group for anything else), recorded with its members."""
        name = group_name(group if isinstance(group, dist.ProcessGroup) else None)
        if name and name not in self.builder.groups:
            describe(lambda n, desc, ranks: self.group_seen(n, desc, ranks, by_call=False), name)
        return name

    def _timed_by(self, source: str) -> None:
        self.sources.add(source)
        self.builder.timed_by = "; ".join(sorted(self.sources))

    def timed(self, hook: CommHook | None = None, state: Any = None, group: Any = None) -> TimedHook:
        """`hook` (DDP's own all-reduce when None), timed, over `group` (the DDP's; else the state's where it is a
        process group, else the default group): register the result as DDP's comm hook."""
        if self.watched is not None:  # a script that registers its own hook: its calls are timed from now
            if self.unspanned:
                self._span_from_ddp(final=True)
            self.watched = None
            self.sources.discard(DDP_TIMERS)
        self._timed_by(CUDA_EVENTS if self.use_cuda else HOST_CLOCK)
        return TimedHook(self, hook, state, group)

    def watch(self, ddp: Any) -> None:
        """A DDP on CPU tensors that keeps its own all-reduce: a Python hook in its place would cost one more pass
        over the gradients (DDP divides them while copying them into its buckets only without a hook), so each
        step's span, from the first bucket's launch to the last one's completion, is read from DDP's own timers
        (its runtime logging, every step)."""
        if self.watched is None and HOST_CLOCK not in self.sources:
            self.watched = ddp
            self.watched_group = self.described(ddp.process_group)
            self._timed_by(DDP_TIMERS)

    def step_started(self) -> None:
        """A step begins now: what ran since the last one ended (commprof's own bookkeeping) is in neither."""
        self.last = time.perf_counter_ns()
        self.last_wall = time.time_ns()
        self.last_core_wait = core_wait_ns()
        if self.use_cuda:
            self.step_start_event = self._event()

    def step_ended(self, step_ms: float | None = None) -> None:
        """The step that began at the last `step_started` has ended (`step_ms`: as the caller timed it)."""
        step = self.builder.steps + len(self.waiting) + len(self.unspanned) + 1
        step_ms = (time.perf_counter_ns() - self.last) / 1e6 if step_ms is None else step_ms
        core_wait_ms = (core_wait_ns() - self.last_core_wait) / 1e6
        launches, self.launches = self.launches, []
        self.clock.step_ended()
        if self.watched is not None:
            self.unspanned.append((step, step_ms, self.last_wall, time.time_ns(), core_wait_ms))
            self._span_from_ddp(final=False)
        elif self.use_cuda:
            self.waiting.append((step, step_ms, self.step_start_event, launches))
            self._resolve_cuda(block=False)
        else:
            calls = tuple(
                Call(x.op, x.bytes, (x.start - self.last) / 1e6, (x.end - x.start) / 1e6, x.group)
                for x in launches
                if x.end is not None
            )
            self.builder.add(StepEntry.of(step, step_ms, calls, core_wait_ms=core_wait_ms))
        if self.due():
            self.write()

    def _span_from_ddp(self, final: bool) -> None:
        """DDP's timers of its last backward (set as the next forward begins, or at the end of the backward) go to
        the step whose time holds their start; the steps before it are complete. `final`: every step is, and the
        last backward's timers are taken as DDP would at a next forward."""
        try:
            if final and self.watched.logger is not None:
                self.watched.logger.set_runtime_stats_and_log()
            data = self.watched._get_ddp_logging_data()
        except Exception:  # noqa: BLE001 - the script's run matters more than its record: steps only from here
            data = {}
        start, end = data.get("backward_comm_time_start", 0), data.get("backward_comm_time_end", 0)
        if start > self.seen_comm_start and end >= start:
            self.seen_comm_start = start
            for i, (step, step_ms, wall_start, wall_end, core_wait_ms) in enumerate(self.unspanned):
                if wall_start <= start <= wall_end:
                    sizes = data.get("rebuilt_bucket_sizes") or data.get("bucket_sizes") or ""
                    ms = (start - wall_start) / 1e6, (end - start) / 1e6
                    call = Call("all_reduce", bucket_bytes(sizes), *ms, self.watched_group)
                    ready = data.get("backward_compute_time_end", 0)  # its last gradient, ready
                    tail_ms = (end - ready) / 1e6 if start <= ready <= end else 0.0
                    for earlier in self.unspanned[:i]:
                        self.builder.add(StepEntry.of(earlier[0], earlier[1], core_wait_ms=earlier[4]))
                    self.builder.add(StepEntry.of(step, step_ms, (call,), tail_ms, core_wait_ms))
                    del self.unspanned[: i + 1]
                    break
        keep = 0 if final else 1  # the last step's span may come with the next forward
        while len(self.unspanned) > keep:
            step, step_ms, _, _, core_wait_ms = self.unspanned.pop(0)
            self.builder.add(StepEntry.of(step, step_ms, core_wait_ms=core_wait_ms))

    def _resolve_cuda(self, block: bool) -> None:
        """Add the CUDA steps whose events have all happened, in order (all of them when `block`)."""
        while self.waiting:
            step, step_ms, start, launches = self.waiting[0]
            events = [x.end for x in launches if x.end is not None]
            if not block and not all(e.query() for e in events):
                return
            for event in events:
                event.synchronize()
            calls = tuple(
                Call(x.op, x.bytes, start.elapsed_time(x.start), x.start.elapsed_time(x.end), x.group)
                for x in launches
                if x.end is not None
            )
            self.builder.add(StepEntry.of(step, step_ms, calls))
            self.waiting.pop(0)

    def write(self) -> None:
        started = time.perf_counter()
        self.builder.clock_ms = self.clock.own_ns / 1e6
        if self.use_cuda:
            self._resolve_cuda(block=False)
        write_bytes_atomic(self.path, encode(self.builder.ledger()))
        self.due.took(time.perf_counter() - started)

    def finish(self) -> None:
        self.builder.clock_ms = self.clock.own_ns / 1e6
        if self.watched is not None:
            self._span_from_ddp(final=True)
        if self.use_cuda:
            self._resolve_cuda(block=True)
        write_bytes_atomic(self.path, encode(self.builder.ledger()))
