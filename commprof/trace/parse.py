"""Decode a Chrome trace file into lean typed records (trace.events): whole, or streamed when it is big."""

from __future__ import annotations

import zlib
from pathlib import Path

import msgspec

from commprof.errors import TraceError
from commprof.trace.chunked import LayoutNotUnderstood, decode_in_chunks
from commprof.trace.events import TraceFile
from commprof.trace.files import read_trace_bytes
from commprof.trace.stream import stream_trace, uncompressed_size

_DECODER = msgspec.json.Decoder(TraceFile)
STREAM_ABOVE_BYTES = 256 * 1024 * 1024  # larger traces are decoded in pieces and kept lean (trace.chunked)


def parse_trace(path: Path) -> TraceFile:
    try:
        if uncompressed_size(path) > STREAM_ABOVE_BYTES:
            return _decode_big(path)
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
    except UnicodeDecodeError as exc:  # msgspec's own error for most bytes, but not for every place they can be
        raise TraceError(str(path), f"not valid JSON (not UTF-8 at byte {exc.start})") from None
    if trace.traceEvents is None:
        raise TraceError(str(path), "JSON without 'traceEvents': not a Chrome/Kineto trace")
    return trace


def _decode_big(path: Path) -> TraceFile:
    try:
        return decode_in_chunks(path)
    except (LayoutNotUnderstood, OSError, EOFError, zlib.error):
        return stream_trace(path)  # it reports what is wrong with the file, if anything
