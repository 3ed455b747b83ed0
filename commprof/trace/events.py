"""The raw records of a Chrome trace, decoded lean (msgspec): only the fields the analysis needs.

`args` stays raw bytes and is decoded only for the few events that need it, so a 54 MB trace
never becomes a tree of Python dicts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

NO_ARGS = msgspec.Raw()  # the one instance omit_defaults recognises


class Links(msgspec.Struct, omit_defaults=True, gc=False):
    """What ties device work to its launch and its CPU op: all a kernel's args that most analysis reads."""

    correlation: Any = None
    external_id: Any = msgspec.field(default=None, name="External id")
    stream: Any = None


# omitted defaults: big traces travel between processes as JSON; no reference cycles, so no garbage-collector tracking
class Event(msgspec.Struct, omit_defaults=True, gc=False):
    ph: str = ""
    name: str = ""
    cat: str = ""
    pid: int | str = 0
    tid: int | str = 0
    ts: float | None = None
    dur: float | None = None
    args: msgspec.Raw = NO_ARGS
    # a big trace's events keep their links decoded, and no other args (trace.stream.keep_lean)
    links: Links | None = msgspec.field(default=None, name="_commprof_links")


Thread = tuple[int | str, int | str]  # an event's (pid, tid)

if TYPE_CHECKING:

    class CompleteEvent(Event, kw_only=True):
        """An Event that trace.partition checked: it has a time, and a duration (0 where the trace gave none).
        For the type checker only: at run time it is Event itself, and no event is ever built as one."""

        ts: float
        dur: float

else:
    CompleteEvent = Event


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


_LINKS_DECODER = msgspec.json.Decoder(Links)
NO_LINKS = Links()


def decode_links(event: Event) -> Links:
    if event.links is not None:
        return event.links
    if not event.args:
        return NO_LINKS
    try:
        return _LINKS_DECODER.decode(event.args)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return NO_LINKS
