"""Where the core of `commprof analyze` spends its time on one trace, in one process (issue 19).

    python benchmarks/measure/bench_analyze_parts.py ../shared/traces/nccl-v100-rank1-of-2-large [--repeats 5]

Times, separately and as medians: reading the file (with gunzip), reading and decoding it into typed records
(the decode floor), classifying the records, and digesting the rank (its step breakdowns); then the three as
`commprof analyze` runs them, with the cyclic garbage collector on and paused (in turn, each repeat)."""

from __future__ import annotations

import argparse
import contextlib
import gc
import statistics
import time
from pathlib import Path

from commprof.analysis.digest import digest
from commprof.trace.classify import classify
from commprof.trace.files import find_trace_files, read_trace_bytes
from commprof.trace.load import collector_paused
from commprof.trace.parse import parse_trace


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", type=Path, help="a trace file, or a folder holding one")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    (path,) = find_trace_files([args.trace])
    parts: dict[str, list[float]] = {
        "read": [],
        "read and decode": [],
        "classify": [],
        "digest": [],
        "decode, classify, digest (collector on)": [],
        "decode, classify, digest (collector paused, as analyze runs them)": [],
    }
    for _ in range(args.repeats):
        start = time.perf_counter()
        read_trace_bytes(path)
        read = time.perf_counter()
        trace = parse_trace(path)
        decoded = time.perf_counter()
        rank = classify(path, trace)
        classified = time.perf_counter()
        digest(rank)
        done = time.perf_counter()
        del trace, rank
        for name, seconds in zip(
            parts,
            (
                read - start,
                decoded - read,
                classified - decoded,
                done - classified,
                _all_three(path, contextlib.nullcontext()),
                _all_three(path, collector_paused()),
            ),
            strict=False,
        ):
            parts[name].append(seconds)
    print("| part | median s |\n|---|---|")
    for name, seconds in parts.items():
        print(f"| {name} | {statistics.median(seconds):.3f} |")


def _all_three(path: Path, collector) -> float:
    gc.collect()
    start = time.perf_counter()
    with collector:
        digest(classify(path, parse_trace(path)))
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
