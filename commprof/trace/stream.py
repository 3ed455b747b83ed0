"""Traces too big to hold in memory: events decoded one at a time, kept lean.

ijson's C parser yields the `traceEvents` items one by one; each complete event ("ph": "X") the
classifier reads becomes a lean Event whose name and category strings are shared, and whose args
are kept only where the analysis reads them (collective kernels and ops: everything; other
kernels, memory operations and runtime calls: the correlation ids). Everything else is dropped as
it streams by. The header fields (distributedInfo, baseTimeNanoseconds, host_name) come from the
first and last megabyte read."""

from __future__ import annotations

import gzip
import json
import re
import sys
import zlib
from collections import deque
from pathlib import Path
from typing import Any, BinaryIO

import ijson
import msgspec

from commprof.errors import TraceError
from commprof.trace import rules
from commprof.trace.events import Event, TraceFile

EDGE_BYTES = 1 << 20
_LINK_KEYS = ("correlation", "External id", "stream")
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
            self.head += data[:EDGE_BYTES - len(self.head)]
        self._recent.append(data)
        self._recent_bytes += len(data)
        while self._recent_bytes - len(self._recent[0]) >= EDGE_BYTES:
            self._recent_bytes -= len(self._recent.popleft())
        return data

    @property
    def tail(self) -> bytes:
        return b"".join(self._recent)[-EDGE_BYTES:]


def stream_trace(path: Path) -> TraceFile:
    """Two passes over the file, neither holding it: the first finds out whether the trace has GPU
    kernels and which runtime calls launched device work; the second keeps only the events the
    classifier reads. A GPU trace then keeps its kernels, memory operations, their launches and the
    few named CPU ranges (steps, backward, collectives): about a tenth of its events. A CPU-only
    trace keeps every complete event, as its operators are its computation."""
    has_kernels, launches = False, set()
    for item in _EdgeKeepingItems(path):
        cat = item.get("cat")
        if cat in rules.KERNEL_CATS or cat in rules.MEMORY_CATS or cat in rules.SYNC_CATS:
            has_kernels = has_kernels or cat in rules.KERNEL_CATS
            if isinstance(item.get("args"), dict):
                launches.add(item["args"].get("correlation"))
    events: list[Event] = []
    for item in (reader := _EdgeKeepingItems(path)):
        if not has_kernels or _used_with_kernels(item, launches):
            events.append(_lean(item))
    header = _header(reader.head) | _header(reader.tail)
    if not events and b'"traceEvents"' not in reader.head + reader.tail:
        raise TraceError(str(path), "JSON without 'traceEvents': not a Chrome/Kineto trace")
    return TraceFile(traceEvents=events, distributedInfo=header.get("distributedInfo"),
                     baseTimeNanoseconds=header.get("baseTimeNanoseconds"), host_name=header.get("host_name"))


def _used_with_kernels(item: dict[str, Any], launches: set[Any]) -> bool:
    cat, name = item.get("cat"), str(item.get("name", ""))
    if cat in rules.KERNEL_CATS or cat in rules.MEMORY_CATS or cat in rules.SYNC_CATS:
        return True
    if cat in rules.RUNTIME_CATS:
        args = item.get("args")
        return isinstance(args, dict) and args.get("correlation") in launches
    return cat in rules.CPU_OP_CATS and bool(rules.STEP_NAME.match(name) or rules.BACKWARD_OP.match(name)
                                            or rules.BUCKET_COPY_BACK.match(name) or _needs_all_args(name, cat))


class _EdgeKeepingItems:
    """The complete events of the file, one at a time, remembering the first and last bytes read."""

    def __init__(self, path: Path):
        self.path, self.head, self.tail = path, b"", b""

    def __iter__(self):
        reader = None
        try:
            with (gzip.open(self.path, "rb") if _is_gzip(self.path) else open(self.path, "rb")) as raw:
                reader = _EdgeKeepingReader(raw)
                for item in ijson.items(reader, "traceEvents.item", use_float=True):
                    if isinstance(item, dict) and item.get("ph") == "X":
                        yield item
        except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
            raise TraceError(str(self.path), f"broken gzip data ({exc})") from None
        except (ijson.JSONError, OSError, ValueError) as exc:
            text = str(exc).lower()
            truncated = "incomplete" in text or "premature eof" in text
            raise TraceError(str(self.path), "truncated JSON" if truncated
                             else f"not valid JSON ({str(exc).splitlines()[0]})") from None
        finally:
            if reader is not None:
                self.head, self.tail = reader.head, reader.tail


def _lean(item: dict[str, Any]) -> Event:
    name, cat = sys.intern(str(item.get("name", ""))), sys.intern(str(item.get("cat", "")))
    args = item.get("args")
    if isinstance(args, dict) and not _needs_all_args(name, cat):
        args = {k: args[k] for k in _LINK_KEYS if k in args} if cat in _LINKED_CATS else None
    return Event(ph="X", name=name, cat=cat, pid=item.get("pid", 0), tid=item.get("tid", 0), ts=item.get("ts"),
                 dur=item.get("dur"), args=msgspec.Raw(msgspec.json.encode(args)) if args else msgspec.Raw())


_LINKED_CATS = rules.KERNEL_CATS | rules.MEMORY_CATS | rules.SYNC_CATS | rules.RUNTIME_CATS


def _needs_all_args(name: str, cat: str) -> bool:
    """The events whose args the classifier reads in full: collective kernels, ops and ranges."""
    return bool(rules.comm_kernel_backend(name) or rules.comm_launching_backend(name)
                or rules.COLLECTIVE_LAUNCH.match(name) or rules.CPU_COMM_RANGE.match(name))


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


def _is_gzip(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == b"\x1f\x8b"


def uncompressed_size(path: Path) -> int:
    """The file's size, or for gzip the size its trailer records (modulo 4 GiB)."""
    if not _is_gzip(path):
        return path.stat().st_size
    with open(path, "rb") as f:
        f.seek(-4, 2)
        return int.from_bytes(f.read(4), "little")
