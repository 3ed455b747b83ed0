"""Decode a Chrome trace file into lean typed records (trace.events): whole, or streamed when it is big."""

from __future__ import annotations

from pathlib import Path

import msgspec

from commprof.errors import TraceError
from commprof.trace.events import TraceFile
from commprof.trace.files import read_trace_bytes
from commprof.trace.stream import stream_trace, uncompressed_size

_DECODER = msgspec.json.Decoder(TraceFile)
STREAM_ABOVE_BYTES = 256 * 1024 * 1024  # larger traces are streamed (commprof.trace.stream)


def parse_trace(path: Path) -> TraceFile:
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
