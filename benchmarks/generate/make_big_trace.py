"""Make one big rank trace from a real one by repeating its steps (issue 8's large-trace benchmark).

    python benchmarks/generate/make_big_trace.py SOURCE OUT.json --megabytes 520

Copy k of every event is shifted by k times the source's span; ProfilerStep numbers, correlation
and External ids are offset per copy so they stay unique. Written event by event, uncompressed."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import msgspec

from commprof.trace.files import read_trace_bytes

_STEP = re.compile(r"^ProfilerStep#(\d+)$")
ID_STRIDE = 10_000_000


def copy_event(event: dict, k: int, span: float, steps: int) -> dict:
    event = dict(event)
    if isinstance(event.get("ts"), (int, float)):
        event["ts"] = event["ts"] + k * span
    match = _STEP.match(str(event.get("name", "")))
    if match:
        event["name"] = f"ProfilerStep#{int(match.group(1)) + k * steps}"
    args = event.get("args")
    if isinstance(args, dict):
        event["args"] = {
            key: value + k * ID_STRIDE if key in ("correlation", "External id") and isinstance(value, int) else value
            for key, value in args.items()
        }
    if isinstance(event.get("id"), int):  # flow events pair by id
        event["id"] = event["id"] + k * ID_STRIDE
    return event


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--megabytes", type=float, default=520)
    args = parser.parse_args()
    source = msgspec.json.decode(read_trace_bytes(args.source))
    events = source.pop("traceEvents")
    timed = [e for e in events if isinstance(e.get("ts"), (int, float))]
    span = max(e["ts"] + (e.get("dur") or 0) for e in timed) - min(e["ts"] for e in timed)
    steps = sum(1 for e in events if _STEP.match(str(e.get("name", ""))))
    encoder = msgspec.json.Encoder()
    target = args.megabytes * 1e6
    with open(args.out, "wb") as out:
        header = encoder.encode(source)
        out.write(header[:-1] + (b', "traceEvents": [' if len(header) > 2 else b'{"traceEvents": ['))
        k, first = 0, True
        while out.tell() < target:
            for event in events:
                out.write((b"" if first else b",\n") + encoder.encode(copy_event(event, k, span, steps)))
                first = False
            k += 1
        out.write(b"]}\n")
    print(f"{args.out}: {args.out.stat().st_size / 1e6:.0f} MB, {k} copies of {len(events)} events")


if __name__ == "__main__":
    main()
