"""Horovod's timeline (HOROVOD_TIMELINE, which its coordinator, rank 0, writes): the collectives Horovod ran, each
fused group once, with its tensors, elements and dtype; and those merged into rank 0's trace.

Horovod runs its collectives in a background thread the profiler does not see on CPU ranks (Gloo), so without the
timeline a Horovod job's trace shows no communication at all. The timeline is Chrome's trace format, one process
per tensor ("allreduce.0.weight"): NEGOTIATE_ALLREDUCE while the ranks report the tensor ready, then the op
(ALLREDUCE) around its activities: the fusion buffer's copies and the transfer itself (GLOO_ALLREDUCE), which the
tensors fused together share, start and end; the op's end carries the tensor's dtype and shape. Its times count from
`start_time_since_epoch_in_micros`; a Kineto trace's from `baseTimeNanoseconds`: both the host's clock.

On GPUs Horovod's NCCL kernels are in the trace already (the profiler sees every kernel); only the CPU transfers
(GLOO_*) are merged."""

from __future__ import annotations

import dataclasses
import json
import math
import re
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import msgspec

from commprof.trace.events import Event, TraceFile
from commprof.trace.files import HOROVOD_TIMELINE as TIMELINE_NAME

TRANSFERS = {"GLOO_ALLREDUCE": "allreduce", "GLOO_BCAST": "broadcast", "GLOO_ALLGATHER": "allgather"}
OPS = {"ALLREDUCE", "BROADCAST", "ALLGATHER", "REDUCESCATTER", "ALLTOALL"}
THREAD = 0x686F726F  # the merged events' thread id ("horo"): Horovod's background thread, as one track
THREAD_NAME = "Horovod background thread (from HOROVOD_TIMELINE)"
PROCESS_GROUP = "horovod"  # the merged ranges' process group
READY_ARG = "Ready us"  # a merged transfer's ready time, in the trace's clock: its tensors' negotiation's end
STEP_ARG = "Horovod step"  # HorovodCollective.step


@dataclass(frozen=True)
class HorovodCollective:
    op: str  # Horovod's name: allreduce, broadcast, allgather
    start_us: float  # since the epoch
    end_us: float
    elements: int
    dtype: str  # "float32"
    tensors: tuple[str, ...]  # the tensors fused into it, by Horovod's names ("allreduce.0.weight")
    ready_us: float  # since the epoch: when its cycle's negotiation ended (every rank had its tensors ready); the
    # transfers a fusion threshold split from one cycle's tensors share it
    step: int = 0  # the training step it served, from 0 (its first allreduce's)


@dataclass(frozen=True)
class Timeline:
    collectives: list[HorovodCollective]
    ranks: int  # the ranks that reported tensors ready in negotiation


def is_timeline(path: Path) -> bool:
    return bool(TIMELINE_NAME.search(path.name))


def timeline_beside(trace: Path) -> Path | None:
    """A Horovod timeline in the trace's folder, if there is one."""
    found = sorted(p for p in trace.parent.iterdir() if is_timeline(p) and p.is_file())
    return found[0] if found else None


def read_timeline(path: Path) -> Timeline:
    """The timeline's transfers, fused groups as one; a timeline cut short (its job stopped before Horovod closed
    it) is read up to its last whole event."""
    events = _events(_text(path))
    start = next(
        (
            e["args"]["start_time_since_epoch_in_micros"]
            for e in events
            if "start_time_since_epoch_in_micros" in e.get("args", {})
        ),
        0,
    )
    names = {
        e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name" and "name" in e.get("args", {})
    }
    open_: dict[Any, list[tuple[str, float]]] = {}
    transfer: dict[Any, tuple[str, float, float]] = {}
    negotiated: dict[Any, float] = {}
    tensors: list[_Sent] = []
    ranks: set[str] = set()
    for event in events:
        phase, pid = event.get("ph"), event.get("pid")
        if phase == "B":
            open_.setdefault(pid, []).append((event.get("name", ""), float(event.get("ts", 0))))
        elif phase == "X" and str(event.get("name", "")).isdigit():
            ranks.add(event["name"])  # a rank reporting the tensor ready
        elif phase == "E" and open_.get(pid):
            name, began = open_[pid].pop()
            ended = float(event.get("ts", began))
            if name.startswith("NEGOTIATE_"):
                negotiated[pid] = ended
            elif name in TRANSFERS:
                transfer[pid] = (TRANSFERS[name], began, ended)
            elif name in OPS and pid in transfer:
                args = event.get("args", {})
                op, began, ended = transfer.pop(pid)
                tensor = names.get(pid, str(pid))
                ready = negotiated.pop(pid, began)
                tensors.append(
                    _Sent(op, began, ended, tensor, _elements(args.get("shape")), args.get("dtype", ""), ready)
                )
    collectives = [
        HorovodCollective(
            op=group[0].op,
            start_us=start + min(t.start for t in group),
            end_us=start + max(t.end for t in group),
            elements=sum(t.elements for t in group),
            dtype=group[0].dtype,
            tensors=tuple(t.tensor for t in group),
            ready_us=start + max(t.ready for t in group),
        )
        for group in _fused(tensors)
    ]
    return Timeline(_by_step(_by_cycle(collectives)), len(ranks))


class _Sent(NamedTuple):
    """One tensor's transfer, as the timeline has it."""

    op: str
    start: float
    end: float
    tensor: str
    elements: int
    dtype: str
    ready: float  # when its negotiation ended


def _fused(tensors: list[_Sent]) -> list[list[_Sent]]:
    """The tensors fused into one transfer: Horovod's background thread runs one transfer at a time, and writes each
    fused tensor's activities with its own time stamp (a microsecond or two apart), so the tensors whose transfers
    overlap in time are one."""
    groups: list[list[_Sent]] = []
    for sent in sorted(tensors, key=lambda t: t.start):
        last = groups[-1] if groups else None
        if last is not None and sent.op == last[0].op and sent.start < max(t.end for t in last):
            last.append(sent)
        else:
            groups.append([sent])
    return groups


def _by_cycle(collectives: list[HorovodCollective]) -> list[HorovodCollective]:
    """Each transfer ready when its cycle's negotiation ended. Horovod's background thread negotiates, then runs one
    after another every transfer it negotiated, and only then negotiates again: a transfer negotiated before the
    previous one started is of that one's cycle. The timeline stamps each tensor's negotiation on its own, microseconds
    apart, which would read one cycle's transfers as ready at different times."""
    out: list[HorovodCollective] = []
    for collective in collectives:
        if out and collective.ready_us < out[-1].start_us:
            collective = dataclasses.replace(collective, ready_us=out[-1].ready_us)
        out.append(collective)
    return out


def _by_step(collectives: list[HorovodCollective]) -> list[HorovodCollective]:
    """Each collective numbered by the training step it served: each gradient is allreduced once a step, so a step
    ends where a tensor is allreduced again."""
    out: list[HorovodCollective] = []
    step, seen = 0, set[str]()
    for collective in collectives:
        if collective.op == "allreduce":
            if seen.intersection(collective.tensors):
                step, seen = step + 1, set()
            seen.update(collective.tensors)
        out.append(dataclasses.replace(collective, step=step))
    return out


def _text(path: Path) -> str:
    """The file's text, gzip or not (Horovod writes it plain; a copy kept may be compressed)."""
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":  # as far as it goes: a copy cut short is read to its last whole event, as a file is
        try:
            data = zlib.decompressobj(wbits=31).decompress(data)
        except zlib.error:
            return ""
    return data.decode(errors="replace")


def _events(text: str) -> list[dict[str, Any]]:
    text = text.strip()
    if not text.endswith("]"):  # not closed: cut at the last whole event
        text = text[: text.rfind("}") + 1].rstrip().rstrip(",") + "]"
    try:
        loaded = json.loads(text)
    except json.JSONDecodeError:
        return []
    return [e for e in loaded if isinstance(e, dict)] if isinstance(loaded, list) else []


def _elements(shape: Any) -> int:
    """'[64, 32]' -> 2048; '[]' (a scalar) -> 1."""
    dims = [int(d) for d in re.findall(r"\d+", str(shape))]
    return math.prod(dims) if dims else 1


def merged(trace: TraceFile, timeline: Timeline) -> TraceFile:
    """Rank 0's trace with Horovod's transfers added as its CPU backend's ranges (gloo:all_reduce, ...) on a thread of
    their own, with their elements, dtype and group: what the profiler records of torch's own Gloo collectives."""
    events = trace.traceEvents or []
    base_us = (trace.baseTimeNanoseconds or 0) / 1000
    pid = next((e.pid for e in events if e.name.startswith("ProfilerStep#")), events[0].pid if events else 0)
    added = [
        Event(
            ph="X",
            name=f"gloo:{_TORCH_NAME[c.op]}",
            cat="user_annotation",
            pid=pid,
            tid=THREAD,
            ts=c.start_us - base_us,
            dur=c.end_us - c.start_us,
            args=msgspec.Raw(
                msgspec.json.encode(
                    {
                        "Collective name": c.op,
                        "In msg nelems": c.elements,
                        "Out msg nelems": c.elements,
                        "dtype": c.dtype,
                        "Group size": timeline.ranks or None,
                        "Process Group Name": PROCESS_GROUP,
                        "Horovod tensors": list(c.tensors),
                        READY_ARG: c.ready_us - base_us,
                        STEP_ARG: c.step,
                    }
                )
            ),
        )
        for c in timeline.collectives
    ]
    thread = Event(
        ph="M", name="thread_name", pid=pid, tid=THREAD, args=msgspec.Raw(msgspec.json.encode({"name": THREAD_NAME}))
    )
    return msgspec.structs.replace(trace, traceEvents=[*events, thread, *added])


_TORCH_NAME = {"allreduce": "all_reduce", "broadcast": "broadcast", "allgather": "all_gather"}
