"""Classify one parsed trace into a RankTrace: steps, compute, communication, memory, collectives."""

from __future__ import annotations

import dataclasses
import re
from bisect import bisect_left, bisect_right
from itertools import accumulate
from pathlib import Path
from typing import Any

from commprof.trace import rules
from commprof.trace.events import CompleteEvent, Event, Links, Thread, TraceFile, decode_args, decode_links
from commprof.trace.gpu_steps import DeviceOp, device_steps, hta_view
from commprof.trace.groups import groups_of
from commprof.trace.horovod_timeline import READY_ARG, STEP_ARG
from commprof.trace.intervals import merge, subtract
from commprof.trace.launches import enclosing_ranges, launching_backend, meta_from_ranges
from commprof.trace.meta import NO_META, CollectiveMeta, meta_from_args
from commprof.trace.model import Collective, DeviceView, Interval, PhaseMarks, RankTrace, Step
from commprof.trace.partition import Partition, partition
from commprof.trace.roles import CollectiveRoles, Roles, backward_passes, last_backward, phase_marks

_RANK_IN_NAME = re.compile(r"rank[-_]?(\d+)", re.IGNORECASE)


UNKNOWN_RANK = -1


def classify(path: Path, trace: TraceFile) -> RankTrace:
    """A RankTrace; its rank is UNKNOWN_RANK when neither distributedInfo nor the file name tells."""
    events = partition(path, trace.traceEvents or ())
    info = trace.distributedInfo or {}
    rank, warnings = _rank(path, info)
    cpu_steps = sorted((Step(e.name, e.ts, e.ts + e.dur) for e in events.steps), key=lambda s: s.start)
    cpu_steps, unfinished = _without_unfinished_step(cpu_steps, events)
    if unfinished:
        warnings.append(
            f"{path.name}: {unfinished} ran no optimizer step where every step before it did (the job ended inside "
            "it): not counted as a step"
        )
    kernels = events.kernels
    hta: DeviceView | None = None
    empty_steps: tuple[str, ...] = ()
    device = _DeviceWork(events) if kernels else None
    others = _other_starts(events, device) if events.backward and cpu_steps else []
    passes = backward_passes([(e.ts, e.ts + e.dur) for e in events.backward], others, cpu_steps)
    optimizer_starts = _first_in_steps(events.optimizer_steps, cpu_steps)
    marks = [phase_marks(s.name, p, o) for s, p, o in zip(cpu_steps, passes, optimizer_starts, strict=True)]
    backward_starts = tuple(last_backward(m) for m in marks)  # the last micro-step's: DDP all-reduces in it
    backward_ends = _backward_ends(events, cpu_steps)
    roles = Roles(events, cpu_steps, marks)  # CPU times, before the GPU's timeline
    if device is not None:
        clock = _GpuClock(device)
        compute, comm, memory, collectives, host_comm = _gpu(events, device, info, cpu_steps, clock, roles)
        work = _device_ops(events, device)
        # a CPU backend's ranges (Gloo on CUDA tensors) belong to the step that issued them, even when they end
        # after its last kernel; HTA counts only the device's work
        steps, empty_steps = device_steps(work + host_comm, cpu_steps) if cpu_steps else (cpu_steps, ())
        hta = hta_view(work, cpu_steps, ns_resolution=events.fractional_times)
        marks = [_on_device(m, clock) for m in marks]
        backward_starts = tuple(clock.started_from(t) for t in backward_starts)
        backward_ends = tuple(clock.done_by(t) for t in backward_ends)
        if empty_steps:  # per step of the device: those of the steps that launched nothing are not in `steps`
            kept = [s.name not in empty_steps for s in cpu_steps]
            backward_starts = tuple(t for t, keep in zip(backward_starts, kept, strict=True) if keep)
            backward_ends = tuple(t for t, keep in zip(backward_ends, kept, strict=True) if keep)
    else:
        steps = cpu_steps
        compute, comm, collectives = _cpu(events, steps, info, roles)
        memory = []
    return RankTrace(
        backward_starts=backward_starts,
        backward_ends=backward_ends,
        phase_marks=tuple(marks),
        path=str(path),
        rank=rank,
        world_size=info.get("world_size"),
        backend=info.get("backend"),
        kind="gpu" if kernels else "cpu",
        base_us=(trace.baseTimeNanoseconds or 0) / 1000.0,
        steps=tuple(steps),
        compute=tuple(compute),
        communication=tuple(comm),
        memory=tuple(memory),
        collectives=tuple(sorted(collectives, key=lambda c: c.start)),
        host=trace.host_name,
        warnings=tuple(warnings),
        hta=hta,
        empty_steps=empty_steps,
        groups=groups_of(info),
    )


def _rank(path: Path, info: dict[str, Any]) -> tuple[int, list[str]]:
    if isinstance(info.get("rank"), int):
        return info["rank"], []
    match = _RANK_IN_NAME.search(path.name)
    if match:
        return int(match.group(1)), [
            f"{path.name}: no distributedInfo.rank; rank {match.group(1)} taken from the file name"
        ]
    return UNKNOWN_RANK, []


class _DeviceWork:
    """GPU kernels and memory operations with their args decoded once, their launches, and which kernels are
    communication (by name, or by the custom collective op that launched them) with the CPU ranges around them."""

    def __init__(self, events: Partition):
        self.kernels = [(k, decode_links(k)) for k in events.kernels]
        self.memory = [(e, decode_links(e)) for e in events.memory]
        self.launch_ts: dict[Any, float] = {}
        self.launch_external: dict[Any, Any] = {}
        self.launches: dict[Any, CompleteEvent] = {}  # correlation -> the runtime call that launched it
        for event in events.runtime:
            links = decode_links(event)
            correlation = links.correlation
            if correlation is not None:
                self.launch_ts[correlation] = event.ts
                self.launches[correlation] = event
                if links.external_id is not None:
                    self.launch_external[correlation] = links.external_id
        kernel_launches = {
            links.correlation: launch
            for _, links in self.kernels
            if (launch := self.launches.get(links.correlation)) is not None
        }
        self.enclosing = enclosing_ranges(events.collective_ranges, kernel_launches)  # kernels' only
        self.comm_backend: dict[int, str] = {}
        for kernel, links in self.kernels:
            backend = rules.comm_kernel_backend(kernel.name) or launching_backend(
                self.enclosing.get(links.correlation, [])
            )
            if backend is not None:
                self.comm_backend[id(kernel)] = backend

    def is_comm(self, kernel: Event) -> bool:
        return id(kernel) in self.comm_backend


class _GpuClock:
    """CPU times on the GPU's timeline, through the launches: when the GPU is the bottleneck the CPU runs
    ahead, so a CPU time says little about when the device did the work that the CPU asked for then."""

    def __init__(self, device: _DeviceWork):
        work = sorted(
            (launched, event.ts, event.ts + event.dur)
            for event, links in device.kernels + device.memory
            if not device.is_comm(event) and (launched := device.launch_ts.get(links.correlation)) is not None
        )
        self._launches = [launched for launched, _, _ in work]
        self._done = list(accumulate((end for _, _, end in work), max))
        self._first_start = list(accumulate((start for _, start, _ in reversed(work)), min))[::-1]

    def done_by(self, cpu_time: float | None) -> float | None:
        """When the device had finished the (non-communication) work launched up to `cpu_time`."""
        i = bisect_right(self._launches, cpu_time) if cpu_time is not None else 0
        return self._done[i - 1] if i else None

    def started_from(self, cpu_time: float | None) -> float | None:
        """When the device began the first work launched at or after `cpu_time`."""
        if cpu_time is None:
            return None
        i = bisect_left(self._launches, cpu_time)
        return self._first_start[i] if i < len(self._first_start) else None

    def ready(self, cpu_launch: float | None, start: float) -> float:
        """A collective's ready time on the device: the work launched before it done, and never after its start."""
        done = self.done_by(cpu_launch)
        return start if done is None else min(done, start)


def _gpu(
    events: Partition, device: _DeviceWork, info: dict[str, Any], cpu_steps: list[Step], clock: _GpuClock, roles: Roles
) -> tuple[list[Interval], list[Interval], list[Interval], list[Collective], list[DeviceOp]]:
    """Kernels, and the ranges of a CPU backend (Gloo, MPI) that moves the data of CUDA tensors on the host: those
    also as work issued when their collective was launched (CPU time), for the step windows."""
    metas = _Metas()
    launch_meta = _launch_op_meta(events, metas)
    comm_kernels = [(k, a) for k, a in device.kernels if device.is_comm(k)]
    compute = merge([(k.ts, k.ts + k.dur) for k, _ in device.kernels if not device.is_comm(k)])
    memory = merge([(e.ts, e.ts + e.dur) for e, _ in device.memory])
    collectives = []
    for kernel, links in comm_kernels:
        args = decode_args(kernel)  # a collective's kernel: every arg
        correlation = links.correlation
        meta = meta_from_args(args)
        external = links.external_id or device.launch_external.get(correlation)
        if external is not None and external != correlation:  # older Kineto: External id == correlation, no op
            meta = meta.filled_from(launch_meta.get(external, NO_META))
        meta = meta.filled_from(meta_from_ranges(device.enclosing.get(correlation, []), metas))
        op = meta.op or rules.op_from_kernel(kernel.name) or "unknown"
        collectives.append(
            _collective(
                meta,
                op,
                device.comm_backend[id(kernel)],
                kernel,
                f"stream {'?' if links.stream is None else links.stream}",
                info,
                clock.ready(device.launch_ts.get(correlation), kernel.ts),
                roles.of(device.launches.get(correlation), op),
            )
        )
    ranges, host_collectives = _backend_ranges(events.comm_ranges, events.launch_ops, cpu_steps, info, roles)
    host_work = [DeviceOp(c.start, c.end, c.start if c.ready is None else c.ready, "comm") for c in host_collectives]
    collectives += [dataclasses.replace(c, ready=clock.ready(c.ready, c.start)) for c in host_collectives]
    comm = merge([(k.ts, k.ts + k.dur) for k, _ in comm_kernels] + ranges)
    return compute, comm, memory, collectives, host_work


def _cpu(
    events: Partition, steps: list[Step], info: dict[str, Any], roles: Roles
) -> tuple[list[Interval], list[Interval], list[Collective]]:
    ops = events.compute_ops
    training = _training_threads(ops, events)
    ops = [e for e in ops if (e.pid, e.tid) in training]
    launches = merge([(e.ts, e.ts + e.dur) for e in ops if rules.COLLECTIVE_LAUNCH.match(e.name)])
    compute = subtract(
        merge([(e.ts, e.ts + e.dur) for e in ops if not rules.COLLECTIVE_LAUNCH.match(e.name)]), launches
    )
    comm, collectives = _backend_ranges(
        events.comm_ranges, [e for e in ops if rules.LAUNCH_OP.match(e.name)], steps, info, roles
    )
    return compute, merge(comm), collectives


def _backend_ranges(
    comm_events: list[CompleteEvent],
    launch_ops: list[CompleteEvent],
    steps: list[Step],
    info: dict[str, Any],
    roles: Roles,
) -> tuple[list[Interval], list[Collective]]:
    """The `gloo:`/`mpi:` ranges (on the backend's threads), each a collective ready at its launch op."""
    launched_by = _launch_ops(comm_events, launch_ops, steps)
    collectives = []
    for e in comm_events:
        launch = launched_by.get(id(e))
        args = decode_args(e)
        ready = launch.ts if launch else _number(args.get(READY_ARG))  # merged from Horovod's timeline: its own
        step = _number(args.get(STEP_ARG))  # Horovod's training step, likewise
        collectives.append(
            _collective(
                meta_from_args(args),
                rules.normalize_op(e.name),
                e.name.split(":")[0],
                e,
                f"thread {e.tid}",
                info,
                ready,
                roles.of(launch, rules.normalize_op(launch.name) or rules.normalize_op(e.name)) if launch else {},
                int(step) if step is not None else None,
            )
        )
    return [(e.ts, e.ts + e.dur) for e in comm_events], collectives


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _launch_ops(
    comm_events: list[CompleteEvent], launches: list[CompleteEvent], steps: list[Step]
) -> dict[int, CompleteEvent]:
    """CPU backends: the k-th launch op in a step started the k-th collective of that step."""
    result: dict[int, CompleteEvent] = {}
    windows = steps or [Step("all", float("-inf"), float("inf"))]
    for window in windows:
        ranges = sorted((e for e in comm_events if window.start <= e.ts < window.end), key=lambda e: e.ts)
        started = sorted((e for e in launches if window.start <= e.ts < window.end), key=lambda e: e.ts)
        if len(ranges) == len(started):
            result.update({id(e): launch for e, launch in zip(ranges, started, strict=False)})
    return result


def _backward_ends(events: Partition, steps: list[Step]) -> tuple[float | None, ...]:
    ends = [e.ts + e.dur for e in events.copy_back]
    return tuple(max((t for t in ends if step.start <= t <= step.end), default=None) for step in steps)


def _other_starts(events: Partition, device: _DeviceWork | None) -> list[float]:
    """Sorted starts of what the training thread (the one that ran ProfilerStep) did other than backward ops and
    collective launch ops: its operators and, on a GPU, its launches of device work (a big GPU trace is read
    without its operators). Between two backward passes that is the next micro-step's forward."""
    threads = {(e.pid, e.tid) for e in events.steps}
    judged: dict[str, bool] = {}
    starts = []
    for e in events.compute_ops:
        if (e.pid, e.tid) not in threads:
            continue
        other = judged.get(e.name)
        if other is None:
            other = judged[e.name] = not (rules.BACKWARD_OP.match(e.name) or rules.COLLECTIVE_LAUNCH.match(e.name))
        if other:
            starts.append(e.ts)
    if device is not None:
        for _, links in device.kernels + device.memory:
            launch = device.launches.get(links.correlation)
            if launch is not None and (launch.pid, launch.tid) in threads:
                starts.append(launch.ts)
    return sorted(starts)


def _on_device(marks: PhaseMarks, clock: _GpuClock) -> PhaseMarks:
    """The phase changes on the device's timeline: when it began the first work launched from each on. A change
    after the last launch, and every one after it, is dropped (the phase before runs to the step's end)."""
    changes = []
    for phase, t in marks.changes:
        started = clock.started_from(t)
        if started is None:
            break
        changes.append((phase, started))
    return dataclasses.replace(marks, changes=tuple(changes))


def _without_unfinished_step(steps: list[Step], events: Partition) -> tuple[list[Step], str | None]:
    """The steps less a last one that ran neither a backward pass nor an optimizer step where every one before it
    stepped the optimizer: the profiler's range still open when the job ended (a script that stops inside the
    window), not a step of training."""
    if len(steps) < 2 or not events.optimizer_steps:
        return steps, None
    optimizer = _first_in_steps(events.optimizer_steps, steps)
    backward = _first_in_steps(events.backward, steps[-1:])
    if optimizer[-1] is None and backward[0] is None and all(t is not None for t in optimizer[:-1]):
        return steps[:-1], steps[-1].name
    return steps, None


def _first_in_steps(events: list[CompleteEvent], steps: list[Step]) -> tuple[float | None, ...]:
    """Per step, the start of the first of the events inside it, or None."""
    starts = sorted(e.ts for e in events)
    result: list[float | None] = []
    for step in steps:
        i = bisect_right(starts, step.start - 1e-9)
        result.append(starts[i] if i < len(starts) and starts[i] < step.end else None)
    return tuple(result)


def _training_threads(ops: list[CompleteEvent], events: Partition) -> set[Thread]:
    """Threads that ran ProfilerStep ranges; without steps, every thread that ran a non-comm op."""
    with_steps = {(e.pid, e.tid) for e in events.steps}
    if with_steps:
        return with_steps
    return {(e.pid, e.tid) for e in ops if not rules.COLLECTIVE_LAUNCH.match(e.name)}


def _collective(
    meta: CollectiveMeta,
    op_hint: str | None,
    backend: str,
    event: CompleteEvent,
    lane: str,
    info: dict[str, Any],
    ready: float | None = None,
    roles: CollectiveRoles | None = None,
    step: int | None = None,
) -> Collective:
    group_size = meta.group_size or _default_group_size(info)
    return Collective(
        op=meta.op or op_hint or "unknown",
        backend=backend,
        start=event.ts,
        end=event.ts + event.dur,
        nbytes=meta.nbytes,
        dtype=meta.dtype,
        group_size=group_size,
        process_group=meta.process_group,
        lane=lane,
        ready=ready,
        peer=meta.peer,
        sends=meta.sends if meta.sends is not None else rules.sends_in(event.name),
        step=step,
        **(roles or {}),
    )


def _default_group_size(info: dict[str, Any]) -> int | None:
    """When every process group has one size (or there is only the world), that size."""
    sizes = {pg.get("pg_size") for pg in info.get("pg_config") or () if isinstance(pg, dict)}
    if len(sizes) == 1 and None not in sizes:
        return sizes.pop()
    return info.get("world_size") if not sizes else None


class _Metas:
    """What each CPU op's args say (meta_from_args), decoded once: the ops that launch a collective are also the
    ranges around its kernels."""

    def __init__(self) -> None:
        self._found: dict[int, tuple[Any, CollectiveMeta]] = {}

    def __call__(self, event: Event) -> CollectiveMeta:
        return self.with_external_id(event)[1]

    def with_external_id(self, event: Event) -> tuple[Any, CollectiveMeta]:
        found = self._found.get(id(event))
        if found is None:
            args = decode_args(event)
            found = self._found[id(event)] = (args.get("External id"), meta_from_args(args))
        return found


def _launch_op_meta(events: Partition, metas: _Metas) -> dict[Any, CollectiveMeta]:
    """External id -> what the CPU-side collective op says (record_param_comms, c10d::*, nccl:*)."""
    found: dict[Any, CollectiveMeta] = {}
    for event in events.collective_launches:
        external, meta = metas.with_external_id(event)
        if external is None:
            continue
        if meta.op is None:
            meta = meta.filled_from(CollectiveMeta(op=rules.normalize_op(event.name.rstrip("_"))))
        previous = found.get(external)
        found[external] = previous.filled_from(meta) if previous else meta
    return found


def _device_ops(events: Partition, device: _DeviceWork) -> list[DeviceOp]:
    def launched(links: Links) -> float | None:
        return device.launch_ts.get(links.correlation)

    ops = [
        DeviceOp(k.ts, k.ts + k.dur, launched(a), "comm" if device.is_comm(k) else "compute") for k, a in device.kernels
    ]
    ops += [DeviceOp(e.ts, e.ts + e.dur, launched(a), "memory") for e, a in device.memory]
    ops += [DeviceOp(e.ts, e.ts + e.dur, launched(decode_links(e)), "sync") for e in events.sync]
    return ops
