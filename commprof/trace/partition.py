"""A rank's complete events sorted once by what the classifier reads them for: one pass over the trace, with
each distinct (category, name) judged once, instead of one filtering pass per question."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from commprof.errors import TraceError
from commprof.trace import rules
from commprof.trace.events import CompleteEvent, Event
from commprof.trace.launches import is_collective_name


@dataclass
class Partition:
    events: list[CompleteEvent] = field(default_factory=list)  # every complete event, in file order
    kernels: list[CompleteEvent] = field(default_factory=list)
    memory: list[CompleteEvent] = field(default_factory=list)
    sync: list[CompleteEvent] = field(default_factory=list)
    runtime: list[CompleteEvent] = field(default_factory=list)
    steps: list[CompleteEvent] = field(default_factory=list)  # ProfilerStep ranges
    backward: list[CompleteEvent] = field(default_factory=list)  # CPU ops that begin a backward pass
    copy_back: list[CompleteEvent] = field(default_factory=list)  # DDP's bucket copy-backs: a backward's end
    collective_ranges: list[CompleteEvent] = field(default_factory=list)  # CPU ranges named after a collective
    # CPU ops that launch one (rules.COLLECTIVE_LAUNCH)
    collective_launches: list[CompleteEvent] = field(default_factory=list)
    launch_ops: list[CompleteEvent] = field(default_factory=list)  # c10d:: ops
    comm_ranges: list[CompleteEvent] = field(default_factory=list)  # a CPU backend's gloo:/mpi: ranges
    compute_ops: list[CompleteEvent] = field(default_factory=list)  # CPU operators other than steps
    fsdp_ranges: list[CompleteEvent] = field(default_factory=list)  # FSDP2's own ranges (rules.FSDP_RANGE)
    optimizer_steps: list[CompleteEvent] = field(default_factory=list)  # Optimizer.step#... ranges
    fractional_times: bool = False  # sub-microsecond timestamps


def partition(path: Path, events: Iterable[Event]) -> Partition:
    """The complete events, checked (a time each, no negative duration; a missing duration is 0) and sorted."""
    part = Partition()
    lists: dict[tuple[str, str], tuple[list[CompleteEvent], ...]] = {}
    keep, fractional = part.events.append, False  # (names bound once: this loop runs for every event)
    for event in events:
        if event.ph != "X":
            continue
        ts, dur = event.ts, event.dur
        if ts is None:
            raise TraceError(str(path), f"event {event.name!r} has no 'ts'")
        if dur is None:
            event.dur = 0.0
        elif dur < 0:
            raise TraceError(str(path), f"event {event.name!r} at ts={ts} has a negative duration")
        if not fractional and ts % 1:
            fractional = True
        complete = cast(CompleteEvent, event)  # checked above: it has a time and a duration
        keep(complete)
        key = (event.cat, event.name)
        found = lists.get(key)
        if found is None:
            found = lists[key] = tuple(getattr(part, name) for name in lists_for(event.cat, event.name))
        for kept in found:
            kept.append(complete)
    part.fractional_times = fractional
    return part


def lists_for(cat: str, name: str) -> tuple[str, ...]:
    """The Partition lists an event of this category and name goes in (by field name)."""
    chosen = [
        field
        for cats, field in (
            (rules.KERNEL_CATS, "kernels"),
            (rules.MEMORY_CATS, "memory"),
            (rules.SYNC_CATS, "sync"),
            (rules.RUNTIME_CATS, "runtime"),
        )
        if cat in cats
    ]
    step = bool(rules.STEP_NAME.match(name))
    if cat in rules.CPU_OP_CATS:
        chosen += [
            field
            for matches, field in (
                (step, "steps"),
                (rules.BACKWARD_OP.match(name), "backward"),
                (rules.BUCKET_COPY_BACK.match(name), "copy_back"),
                (is_collective_name(name), "collective_ranges"),
                (rules.COLLECTIVE_LAUNCH.match(name), "collective_launches"),
                (rules.LAUNCH_OP.match(name), "launch_ops"),
                (rules.FSDP_RANGE.match(name), "fsdp_ranges"),
                (rules.OPTIMIZER_STEP.match(name), "optimizer_steps"),
            )
            if matches
        ]
    if rules.CPU_COMM_RANGE.match(name):
        chosen.append("comm_ranges")
    if cat in rules.CPU_COMPUTE_CATS and not step:
        chosen.append("compute_ops")
    return tuple(chosen)
