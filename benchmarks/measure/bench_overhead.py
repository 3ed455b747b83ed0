"""Profiling overhead (issue 8): commprof's instrumentation against plain DDP, in one launch per workload.

    python benchmarks/measure/bench_overhead.py --workdir /tmp/bench-overhead [--rounds 8] [--block 10]
        [--workloads mlp,convnet,transformer,mlstm] [--no-record-shapes]

Blocks of `--block` steps alternate between plain DDP, commprof's instrumented loop outside the
profiler's active window, and inside it (benchmarks/workloads/overhead_worker.py), 2 Gloo ranks on CPU.
Overhead: the median over rounds of (instrumented block / the same round's plain block) - 1, with
a bootstrap 95% CI. Goals: median overhead outside the active window at most 3%, inside it under 10%, for
every workload; exits 1 otherwise. --no-record-shapes records without every operator's input shapes (commprof
records them: they give the collective sizes), for the comparison."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

# the repository root, when run as a file: the ranks unpickle overhead_main from benchmarks.workloads by it
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from benchmarks.workloads.overhead_worker import overhead_main  # noqa: E402
from commprof.analysis.stats import median_ci  # noqa: E402
from commprof.config import RunRequest  # noqa: E402
from commprof.launch.job import Task, run_job  # noqa: E402
from commprof.launch.resolve import MachineProbe, resolve  # noqa: E402

GOAL = 0.03
GOAL_INSIDE = 0.10
WORKLOADS = "mlp,convnet,transformer,mlstm"


def measure(model: str, size: str, rounds: int, block: int, workdir: Path, record_shapes: bool) -> dict:
    config = resolve(
        RunRequest(
            model=model,
            model_size=size,
            run_id=f"overhead-{model}-{size}",
            traces_dir=workdir / "traces",
            reports_dir=workdir / "reports",
        ),
        MachineProbe.detect(),
    )
    result = run_job(
        config,
        Task(
            overhead_main,
            None,
            {"config": config.to_dict(), "rounds": rounds, "block": block, "record_shapes": record_shapes},
        ),
    )
    data = json.loads((result.run_dir / "overhead.json").read_text())
    # each round's blocks ran back to back: per-round ratios cancel the machine's slow drifts
    outside = median_ci([i / p for i, p in zip(data["instrumented"], data["plain"], strict=False)])
    inside = median_ci([a / p for a, p in zip(data["active"], data["plain_for_active"], strict=False)])
    steady = statistics.median(data["plain"])
    settle = next((i for i, ms in enumerate(data["first_steps_ms"]) if ms <= 1.05 * steady), None)
    return {
        "workload": f"{model}-{size}",
        "plain_ms": steady,
        "instrumented_ms": statistics.median(data["instrumented"]),
        "active_ms": statistics.median(data["active"]),
        "active_first_ms": statistics.median(data["active_first"]),
        "overhead_outside": [outside.value - 1, outside.low - 1, outside.high - 1],
        "overhead_inside": [inside.value - 1, inside.low - 1, inside.high - 1],
        "first_steps_ms": data["first_steps_ms"],
        "steps_to_steady": settle,
        "raw": data,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=24)
    parser.add_argument("--block", type=int, default=8)
    parser.add_argument("--workloads", default=WORKLOADS)
    parser.add_argument("--no-record-shapes", dest="record_shapes", action="store_false")
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    results = [
        measure(model, "small", args.rounds, args.block, args.workdir, args.record_shapes)
        for model in args.workloads.split(",")
    ]
    (args.workdir / "overhead-results.json").write_text(json.dumps(results, indent=2))
    print("| workload | plain ms/step | outside the active window | inside it | first active step | steps to steady |")
    print("|---|---|---|---|---|---|")
    for r in results:
        out, ins = r["overhead_outside"], r["overhead_inside"]
        print(
            f"| {r['workload']} | {r['plain_ms']:.1f} | {out[0]:+.1%} [{out[1]:+.1%}, {out[2]:+.1%}] | "
            f"{ins[0]:+.1%} [{ins[1]:+.1%}, {ins[2]:+.1%}] | {r['active_first_ms']:.1f} ms | {r['steps_to_steady']} |"
        )
    return 0 if all(r["overhead_outside"][0] <= GOAL and r["overhead_inside"][0] < GOAL_INSIDE for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
