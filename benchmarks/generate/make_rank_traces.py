"""Make a job of N ranks from one real rank trace: per-host clock offsets, per-rank speed jitter,
and one straggler. For the analysis scaling benchmark (issue 8).

    python benchmarks/generate/make_rank_traces.py SOURCE OUT_DIR --ranks 1024 [--ranks-per-host 8] [--seed 0]

Rank r is the source stretched in time by (1 + e_r) about its first event, e_r ~ N(0, 2%) (the
straggler, rank N // 3, is 15% slower), then shifted by its host's clock offset, uniform in
+-5 ms; stretching keeps every nesting intact. Files are written gzipped (level 1), as
rank<r>.pt.trace.json.gz."""

from __future__ import annotations

import argparse
import gzip
import random
from pathlib import Path

import msgspec

from commprof.trace.files import read_trace_bytes


def rank_trace(source: dict, rank: int, world: int, stretch: float, shift_us: float) -> dict:
    events = source["traceEvents"]
    start = min(e["ts"] for e in events if isinstance(e.get("ts"), (int, float)))
    out = []
    for event in events:
        event = dict(event)
        if isinstance(event.get("ts"), (int, float)):
            event["ts"] = start + (event["ts"] - start) * stretch + shift_us
        if isinstance(event.get("dur"), (int, float)):
            event["dur"] = event["dur"] * stretch
        if event.get("ph") == "M" and event.get("name") == "process_name":
            event["args"] = {**event.get("args", {}), "name": f"rank {rank}"}
        out.append(event)
    info = {**source.get("distributedInfo", {}), "rank": rank, "world_size": world}
    info.pop("pg_config", None)  # per-group rank lists would be N entries long in every file
    return {**source, "traceEvents": out, "distributedInfo": info}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--ranks", type=int, required=True)
    parser.add_argument("--ranks-per-host", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    source = msgspec.json.decode(read_trace_bytes(args.source))
    rng = random.Random(args.seed)
    host_shift = [rng.uniform(-5000, 5000) for _ in range(args.ranks // args.ranks_per_host + 1)]
    host_shift[0] = 0.0
    straggler = args.ranks // 3
    args.out.mkdir(parents=True, exist_ok=True)
    for rank in range(args.ranks):
        stretch = 1.15 if rank == straggler else 1 + rng.gauss(0, 0.02)
        trace = rank_trace(source, rank, args.ranks, stretch, host_shift[rank // args.ranks_per_host])
        trace["host_name"] = f"host{rank // args.ranks_per_host:04d}"
        (args.out / f"rank{rank}.pt.trace.json.gz").write_bytes(
            gzip.compress(msgspec.json.encode(trace), compresslevel=1)
        )
    print(f"{args.ranks} ranks in {args.out}, straggler rank {straggler}")


if __name__ == "__main__":
    main()
