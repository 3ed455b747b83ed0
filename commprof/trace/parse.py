"""Decode a Chrome trace into lean typed records (msgspec): only the fields the analysis needs.

`args` stays raw bytes and is decoded only for the few events that need it, so a 54 MB trace
never becomes a tree of Python dicts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from commprof.errors import TraceError
from commprof.trace.files import read_trace_bytes


class Event(msgspec.Struct):
    ph: str = ""
    name: str = ""
    cat: str = ""
    pid: int | str = 0
    tid: int | str = 0
    ts: float | None = None
    dur: float | None = None
    args: msgspec.Raw = msgspec.Raw()


class TraceFile(msgspec.Struct):
    traceEvents: list[Event] | None = None
    distributedInfo: dict[str, Any] | None = None
    baseTimeNanoseconds: int | None = None
    host_name: str | None = None


_DECODER = msgspec.json.Decoder(TraceFile)
_ARGS_DECODER = msgspec.json.Decoder(dict[str, Any])


STREAM_ABOVE_BYTES = 256 * 1024 * 1024  # larger traces are streamed (commprof.trace.stream)


def parse_trace(path: Path) -> TraceFile:
    from commprof.trace.stream import stream_trace, uncompressed_size

    try:
        if uncompressed_size(path) > STREAM_ABOVE_BYTES:
            return stream_trace(path)
    except OSError:
        pass  # reported below, by the reader
    data = read_trace_bytes(path)
    try:
        trace = _DECODER.decode(data)
    except msgspec.ValidationError as exc:
        raise TraceError(str(path), f"not a profiler trace: {exc}") from None
    except msgspec.DecodeError as exc:
        problem = "truncated JSON" if "truncated" in str(exc).lower() else f"not valid JSON ({exc})"
        raise TraceError(str(path), problem) from None
    if trace.traceEvents is None:
        raise TraceError(str(path), "JSON without 'traceEvents': not a Chrome/Kineto trace")
    return trace


def decode_args(event: Event) -> dict[str, Any]:
    if not event.args:
        return {}
    try:
        return _ARGS_DECODER.decode(event.args)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return {}
