"""The raw records of a Chrome trace, decoded lean (msgspec): only the fields the analysis needs.

`args` stays raw bytes and is decoded only for the few events that need it, so a 54 MB trace
never becomes a tree of Python dicts.
"""

from __future__ import annotations

from typing import Any

import msgspec


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


_ARGS_DECODER = msgspec.json.Decoder(dict[str, Any])


def decode_args(event: Event) -> dict[str, Any]:
    if not event.args:
        return {}
    try:
        return _ARGS_DECODER.decode(event.args)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return {}
