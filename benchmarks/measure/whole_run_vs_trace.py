"""The whole-run record's all-reduce figures against the profiler's, on the steps both saw (docs/semantics.md,
Whole run):

    python benchmarks/measure/whole_run_vs_trace.py --workdir /tmp/vs-trace [-- extra commprof run options]

Runs `commprof run` (default: mlp-small, 2 Gloo ranks) and prints, for each profiled step of rank 0, the trace's
span from its first `gloo:all_reduce` range to the end of its last, and the record's time with a call in flight
(one span per step from DDP's own timers; one entry per bucket with a comm hook, e.g. --comm-hook fp16)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, when run as a file
from benchmarks.common import commprof  # noqa: E402
from commprof.results.step_ledger import read_ledgers  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("extra", nargs="*")
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    commprof("run", "--quiet", "--run-id", "vs-trace", *args.extra, cwd=args.workdir)
    run_dir = args.workdir / "traces" / "vs-trace"
    ledger = read_ledgers(run_dir)[0]
    events = json.loads((run_dir / "rank0.pt.trace.json").read_text())["traceEvents"]
    steps = sorted((e for e in events if e.get("name", "").startswith("ProfilerStep#")), key=lambda e: e["ts"])
    reduces = [e for e in events if e.get("name", "").startswith("gloo:all_reduce") and e.get("ph") == "X"]
    print(f"timed by: {ledger.timed_by}")
    print("step  trace span ms  record ms  difference ms")
    for step, entry in zip(steps, ledger.window, strict=False):
        mine = [e for e in reduces if step["ts"] <= e["ts"] < step["ts"] + step["dur"]]
        if not mine or not entry.calls:
            continue
        span = (max(e["ts"] + e["dur"] for e in mine) - min(e["ts"] for e in mine)) / 1000
        recorded = entry.comm_ms
        print(f"{entry.step:4d}  {span:13.1f}  {recorded:9.1f}  {recorded - span:+13.1f}")


if __name__ == "__main__":
    main()
