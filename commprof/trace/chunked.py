"""Big traces decoded in chunks: the `traceEvents` array cut at event boundaries, each piece decoded by
msgspec (in worker processes when there is more than one core) and slimmed to what the classifier reads
(stream.keep_lean) before the next is read, so the whole file is never held decoded.

A cut is made where one event closes and the next opens (`}`, `,`, `{`). A cut that falls inside an
event (an args list of objects, a string holding those characters) leaves a piece that is not valid JSON,
so it can never pass unnoticed: the file is then streamed event by event instead (stream.stream_trace)."""

from __future__ import annotations

import gzip
import json
import multiprocessing
import os
import re
import sys
from collections import deque
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import Any, Iterator

import msgspec

from commprof.trace import rules
from commprof.trace.events import Event, Links, TraceFile, decode_links
from commprof.trace.stream import DEVICE_CATS, EDGE_BYTES, is_gzip, keep_lean

CHUNK_BYTES = 2 << 20
_ARRAY_START = re.compile(rb'"traceEvents"\s*:\s*\[\s*')
_BETWEEN_EVENTS = re.compile(rb"\}\s*,\s*\{")
_EVENTS = msgspec.json.Decoder(list[Event])
_ENCODER = msgspec.json.Encoder()
MAX_WORKERS = 4
_WINDOW = 64 << 10


class LayoutNotUnderstood(Exception):
    """The file cannot be cut into pieces safely; it is streamed instead."""


def decode_in_chunks(path: Path, workers: int | None = None) -> TraceFile:
    """The trace's complete events, kept lean, with its header fields. Raises LayoutNotUnderstood."""
    pieces = _Pieces(path)
    events = _decode_pieces(pieces, workers)
    return TraceFile(
        traceEvents=events,
        distributedInfo=pieces.header.get("distributedInfo"),
        baseTimeNanoseconds=pieces.header.get("baseTimeNanoseconds"),
        host_name=pieces.header.get("host_name"),
    )


class _Pieces:
    """The events array of a file (plain or gzip), read front to back and cut into pieces of whole events;
    `header` holds the top-level fields around the array once the pieces are all read."""

    def __init__(self, path: Path):
        self.path = path
        self.header: dict[str, Any] = {}

    def __iter__(self) -> Iterator[bytes]:
        with gzip.open(self.path, "rb") if is_gzip(self.path) else open(self.path, "rb") as f:
            buffer = f.read(EDGE_BYTES)
            match = _ARRAY_START.search(buffer)
            if match is None:
                raise LayoutNotUnderstood("no traceEvents array near the start")
            before = _object_rest(buffer[: match.start()].rstrip().rstrip(b",") + b"}", opening=True)
            if before is None:
                raise LayoutNotUnderstood("the fields before traceEvents are not plain JSON")
            buffer = buffer[match.end() :]
            while True:
                buffer += f.read(max(0, CHUNK_BYTES + _WINDOW - len(buffer)))
                cut = _BETWEEN_EVENTS.search(buffer, CHUNK_BYTES, CHUNK_BYTES + _WINDOW)
                if cut is None and len(buffer) < CHUNK_BYTES + _WINDOW:
                    break  # the file ends within reach: the rest is the last piece
                if cut is None:
                    raise LayoutNotUnderstood("no event boundary within 64 KiB of a cut")
                yield buffer[: cut.start() + 1]
                buffer = buffer[cut.end() - 1 :]
        end, after = _array_end(buffer)
        self.header = before | after
        yield buffer[:end]


def _array_end(rest: bytes) -> tuple[int, dict[str, Any]]:
    """Where the events array closes in the file's last bytes, and the fields after it."""
    offset = max(0, len(rest) - EDGE_BYTES)
    for match in re.finditer(rb"\]", rest[offset:]):
        after = _object_rest(rest[offset + match.start() + 1 :], opening=False)
        if after is not None:
            return offset + match.start(), after
    raise LayoutNotUnderstood("the end of traceEvents is not in the last megabyte")


def _object_rest(text: bytes, opening: bool) -> dict[str, Any] | None:
    """`{ ...fields }` (opening) or what follows the array: `, "key": value ... }` or `}`; None if not that."""
    stripped = text.strip()
    if not opening:
        if stripped == b"}":
            return {}
        if not stripped.startswith(b","):
            return None
        stripped = b"{" + stripped[1:]
    try:
        found = json.loads(stripped)
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def _decode_pieces(pieces: _Pieces, workers: int | None) -> list[Event]:
    """Two passes over the pieces. The first finds whether the trace has kernels and which runtime calls
    launched device work; the second keeps, of a GPU trace, its device work, those calls and the few CPU
    ranges the classifier reads (about a tenth of the events), and of a CPU trace every complete event."""
    workers = workers or _default_workers()
    launches: set[Any] = set()
    has_kernels = False
    for links, kernels in _each(pieces, workers, _device_links, None):
        launches.update(links)
        has_kernels = has_kernels or kernels
    launches.discard(None)
    events: list[Event] = []
    thread_ids: dict[Any, Any] = {}
    for encoded in _each(pieces, workers, _lean_piece, launches if has_kernels else None):
        events += _settled(_EVENTS.decode(encoded), thread_ids)
    return events


def _each(pieces: _Pieces, workers: int, task, launches: set[Any] | None) -> Iterator[Any]:
    """task(piece) for every piece, in order, with `launches` known to it; in worker processes when there
    are several, at most two pieces per worker read and not yet taken back, so memory stays bounded."""
    if workers <= 1:
        _know(launches)
        yield from map(task, pieces)
        return
    with ProcessPoolExecutor(max_workers=workers, initializer=_know, initargs=(launches,)) as pool:
        pending: deque[Future] = deque()
        for piece in pieces:
            pending.append(pool.submit(task, piece))
            if len(pending) >= 2 * workers:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


_LAUNCHES: set[Any] | None = None  # the second pass's: None keeps every complete event (a CPU trace)


def _know(launches: set[Any] | None) -> None:
    global _LAUNCHES
    _LAUNCHES = launches


def _settled(events: list[Event], shared: dict[Any, Any]) -> list[Event]:
    """Events that outlive the bytes they were decoded from: args copied out (a Raw keeps its whole source
    alive otherwise) and the repeated names and thread ids shared."""
    for e in events:
        e.name, e.cat = sys.intern(e.name), sys.intern(e.cat)
        e.pid, e.tid = shared.setdefault(e.pid, e.pid), shared.setdefault(e.tid, e.tid)
        if e.args:
            e.args = e.args.copy()
    return events


def _default_workers() -> int:
    """A pool only from the main process: a file loaded in a worker of the per-rank pool is decoded there."""
    if multiprocessing.parent_process() is not None:
        return 1
    return min(MAX_WORKERS, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


def _decoded(data: bytes, decoder: msgspec.json.Decoder) -> list:
    try:
        return decoder.decode(b"[" + data + b"]")
    except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError) as exc:
        raise LayoutNotUnderstood(f"a piece is not a list of events ({exc})") from None


class _Linked(msgspec.Struct):  # what the first pass reads of an event
    cat: str = ""
    args: Links | None = None


_LINKED = msgspec.json.Decoder(list[_Linked])


def _device_links(data: bytes) -> tuple[list[Any], bool]:
    """The correlation ids of a piece's device work, and whether it has kernels."""
    events = _decoded(data, _LINKED)
    return (
        [e.args.correlation for e in events if e.cat in DEVICE_CATS and e.args is not None],
        any(e.cat in rules.KERNEL_CATS for e in events),
    )


def _lean_piece(data: bytes) -> bytes:
    """A piece's events as the second pass keeps them, encoded for the trip back."""
    launches = _LAUNCHES
    keep_all = launches is None
    kept = [lean for e in _decoded(data, _EVENTS) if e.ph == "X" and (lean := keep_lean(e, keep_all)) is not None]
    if launches is not None:
        kept = [e for e in kept if e.cat not in rules.RUNTIME_CATS or decode_links(e).correlation in launches]
    return _ENCODER.encode(kept)
