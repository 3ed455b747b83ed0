"""Build tiny Kineto-style traces by hand, so every expected interval can be checked by eye."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

TRAIN = (100, 100)  # (pid, tid) of the training thread
GLOO = (100, 200)  # a Gloo worker thread


class TraceBuilder:
    def __init__(self, rank: int | None = 0, world_size: int = 2, backend: str = "gloo", base_ns: int | None = None):
        self.events: list[dict[str, Any]] = []
        self.header: dict[str, Any] = {"schemaVersion": 1}
        if rank is not None:
            self.header["distributedInfo"] = {"backend": backend, "rank": rank, "world_size": world_size}
        if base_ns is not None:
            self.header["baseTimeNanoseconds"] = base_ns

    def x(self, name: str, ts: float, dur: float, cat: str = "cpu_op", thread=TRAIN, **args: Any) -> TraceBuilder:
        event = {"ph": "X", "cat": cat, "name": name, "pid": thread[0], "tid": thread[1], "ts": ts, "dur": dur}
        if args:
            event["args"] = {k.replace("_", " "): v for k, v in args.items()}
        self.events.append(event)
        return self

    def step(self, n: int, ts: float, dur: float) -> TraceBuilder:
        return self.x(f"ProfilerStep#{n}", ts, dur, cat="user_annotation")

    def kernel(self, name: str, ts: float, dur: float, correlation: int, stream: int = 7, **args: Any) -> TraceBuilder:
        return self.x(name, ts, dur, cat="kernel", thread=(0, stream), correlation=correlation, stream=stream, **args)

    def launch(self, ts: float, correlation: int, external_id: int | None = None) -> TraceBuilder:
        extra = {"External_id": external_id} if external_id is not None else {}
        return self.x("cudaLaunchKernel", ts, 1, cat="cuda_runtime", correlation=correlation, **extra)

    def write(self, path: Path, gz: bool = False) -> Path:
        data = json.dumps({**self.header, "traceEvents": self.events}).encode()
        if gz:
            import gzip

            data = gzip.compress(data)
        path.write_bytes(data)
        return path
