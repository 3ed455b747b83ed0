"""Big traces event by event (ijson), and what a big trace keeps of its events.

The event-by-event path is the fallback for a file that cannot be cut into pieces (trace.chunked): it
never holds the file, but decodes it in Python callbacks, several times slower. Both paths keep an event
only where the classifier reads it (keep_lean, lean_events), with only the args it reads: collective
kernels and ops keep everything, other kernels, memory operations and runtime calls their links
(events.Links), the rest nothing. The header fields (distributedInfo, baseTimeNanoseconds, host_name)
come from the first and last megabyte read."""

from __future__ import annotations

import gzip
import json
import re
import sys
import zlib
from collections import deque
from pathlib import Path
from typing import Any, BinaryIO, Callable

import ijson
import msgspec

from commprof.errors import TraceError
from commprof.trace import rules
from commprof.trace.events import NO_ARGS, Event, TraceFile, decode_links
from commprof.trace.partition import lists_for

EDGE_BYTES = 1 << 20
_HEADER_KEY = re.compile(r'"(distributedInfo|baseTimeNanoseconds|host_name)"\s*:\s*')


class _EdgeKeepingReader:
    """A file wrapper that remembers the first and the last EDGE_BYTES it handed out."""

    def __init__(self, raw: BinaryIO):
        self.raw, self.head = raw, b""
        self._recent: deque[bytes] = deque()
        self._recent_bytes = 0

    def read(self, size: int = -1) -> bytes:
        data = self.raw.read(size)
        if len(self.head) < EDGE_BYTES:
            self.head += data[: EDGE_BYTES - len(self.head)]
        self._recent.append(data)
        self._recent_bytes += len(data)
        while self._recent_bytes - len(self._recent[0]) >= EDGE_BYTES:
            self._recent_bytes -= len(self._recent.popleft())
        return data

    @property
    def tail(self) -> bytes:
        return b"".join(self._recent)[-EDGE_BYTES:]


def stream_trace(path: Path) -> TraceFile:
    """The file's events one by one (ijson), never holding it: the fallback for a file that cannot be cut
    into pieces (trace.chunked)."""
    reader = _EdgeKeepingItems(path)
    events = lean_events(lambda keep_all: [lean for item in reader if (lean := keep_lean(_event(item), keep_all))])
    header = _header(reader.head) | _header(reader.tail)
    if not events and b'"traceEvents"' not in reader.head + reader.tail:
        raise TraceError(str(path), "JSON without 'traceEvents': not a Chrome/Kineto trace")
    return TraceFile(
        traceEvents=events,
        distributedInfo=header.get("distributedInfo"),
        baseTimeNanoseconds=header.get("baseTimeNanoseconds"),
        host_name=header.get("host_name"),
    )


def lean_events(decode: Callable[[bool], list[Event]]) -> list[Event]:
    """What a big trace keeps: `decode(keep_all)` gives every complete event as keep_lean leaves it. A GPU
    trace then keeps its kernels, memory operations, the runtime calls that launched them and the few named
    CPU ranges (steps, backward, collectives): about a tenth of its events. A CPU trace (no kernels: decoded
    a second time) keeps every complete event, as its operators are its computation."""
    events = decode(False)
    if not any(e.cat in rules.KERNEL_CATS for e in events):
        return decode(True)
    launches = {decode_links(e).correlation for e in events if e.cat in DEVICE_CATS}
    return [e for e in events if e.cat not in rules.RUNTIME_CATS or decode_links(e).correlation in launches]


def keep_lean(event: Event, keep_all: bool) -> Event | None:
    """The event with only the args the classifier reads, or None where a GPU trace's analysis never reads
    it (`keep_all`: keep every event). Runtime calls are kept with their correlation ids (lean_events keeps
    those that launched device work)."""
    keep = _KEEP.get((event.cat, event.name)) or _keeping(event.cat, event.name)
    if keep == _DROP and not keep_all:
        return None
    if keep == _LINKS:
        event.links = decode_links(event)
    if keep != _ALL_ARGS:
        event.args = NO_ARGS
    return event


_DROP, _NO_ARGS, _LINKS, _ALL_ARGS = 1, 2, 3, 4
_KEEP: dict[tuple[str, str], int] = {}  # names repeat: one decision each


def _keeping(cat: str, name: str) -> int:
    if _needs_all_args(name, cat):
        keep = _ALL_ARGS
    elif cat in _LINKED_CATS:
        keep = _LINKS
    elif any(field != "compute_ops" for field in lists_for(cat, name)):  # read beside the kernels (partition)
        keep = _NO_ARGS
    else:
        keep = _DROP
    _KEEP[cat, name] = keep
    return keep


class _EdgeKeepingItems:
    """The complete events of the file, one at a time, remembering the first and last bytes read."""

    def __init__(self, path: Path):
        self.path, self.head, self.tail = path, b"", b""

    def __iter__(self):
        reader = None
        try:
            with gzip.open(self.path, "rb") if is_gzip(self.path) else open(self.path, "rb") as raw:
                reader = _EdgeKeepingReader(raw)
                for item in ijson.items(reader, "traceEvents.item", use_float=True):
                    if isinstance(item, dict) and item.get("ph") == "X":
                        yield item
        except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
            raise TraceError(str(self.path), f"broken gzip data ({exc})") from None
        except (ijson.JSONError, OSError, ValueError) as exc:
            text = str(exc).lower()
            truncated = "incomplete" in text or "premature eof" in text
            raise TraceError(
                str(self.path), "truncated JSON" if truncated else f"not valid JSON ({str(exc).splitlines()[0]})"
            ) from None
        finally:
            if reader is not None:
                self.head, self.tail = reader.head, reader.tail


def _event(item: dict[str, Any]) -> Event:
    args = item.get("args")
    return Event(
        ph="X",
        name=sys.intern(str(item.get("name", ""))),
        cat=sys.intern(str(item.get("cat", ""))),
        pid=item.get("pid", 0),
        tid=item.get("tid", 0),
        ts=item.get("ts"),
        dur=item.get("dur"),
        args=msgspec.Raw(msgspec.json.encode(args)) if isinstance(args, dict) and args else NO_ARGS,
    )


DEVICE_CATS = rules.KERNEL_CATS | rules.MEMORY_CATS | rules.SYNC_CATS
_LINKED_CATS = DEVICE_CATS | rules.RUNTIME_CATS


def _needs_all_args(name: str, cat: str) -> bool:
    """The events whose args the classifier reads in full: collective kernels, ops and ranges."""
    return bool(
        rules.comm_kernel_backend(name)
        or rules.comm_launching_backend(name)
        or rules.COLLECTIVE_LAUNCH.match(name)
        or rules.CPU_COMM_RANGE.match(name)
    )


def _header(data: bytes) -> dict[str, Any]:
    """The top-level fields found in a stretch of the file (they are never inside an event)."""
    found: dict[str, Any] = {}
    text = data.decode("utf-8", errors="ignore")
    for match in _HEADER_KEY.finditer(text):
        try:
            found[match.group(1)] = json.JSONDecoder().raw_decode(text, match.end())[0]
        except ValueError:  # cut off at the window's edge
            continue
    return found


def is_gzip(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == b"\x1f\x8b"


def uncompressed_size(path: Path) -> int:
    """The file's size, or for gzip the size its trailer records (modulo 4 GiB)."""
    if not is_gzip(path):
        return path.stat().st_size
    with open(path, "rb") as f:
        f.seek(-4, 2)
        return int.from_bytes(f.read(4), "little")
