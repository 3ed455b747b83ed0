"""The profiler's distortion inside its window, for each built-in workload: what every commprof run reports
(report.json `profiler_distortion`: median step inside the active window against the unprofiled steps of
the same run, per rank), over several runs.

    python benchmarks/measure/bench_distortion.py --workdir /tmp/bench-distortion --repeats 3

Runs `commprof run --model M --steps 30` (2 Gloo ranks, default schedule: 15 unprofiled steps after the
first three, 10 profiled) for each workload in turn, the workloads interleaved within each repeat. Prints a
Markdown table: per workload, the median over runs and ranks of the unprofiled and profiled step and of the
slowdown, with the smallest and largest run's slowdown (median over its ranks).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, when run as a file
from benchmarks.common import commprof, read_report  # noqa: E402

MODELS = ("mlp", "transformer", "convnet", "mlstm")


def one_run(workdir: Path, model: str, run_id: str, steps: int) -> list[dict]:
    commprof(
        "run",
        "--model",
        model,
        "--steps",
        str(steps),
        "--traces-dir",
        str(workdir / "traces"),
        "--reports-dir",
        str(workdir / "reports"),
        "--run-id",
        run_id,
        "--quiet",
    )
    return read_report(workdir, run_id)["profiler_distortion"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--models", default=",".join(MODELS))
    args = parser.parse_args()
    models = args.models.split(",")
    found: dict[str, list[list[dict]]] = {m: [] for m in models}
    for repeat in range(args.repeats):
        for model in models:
            found[model].append(one_run(args.workdir, model, f"{model}-{repeat}", args.steps))
            print(f"{model} run {repeat + 1}: {[round(d['slowdown'], 3) for d in found[model][-1]]}", file=sys.stderr)
    print("| workload | unprofiled ms/step | profiled ms/step | slowdown (median) | runs' range |")
    print("|---|---|---|---|---|")
    for model, runs in found.items():
        every = [d for run in runs for d in run]
        per_run = [statistics.median(d["slowdown"] for d in run) for run in runs]
        print(
            f"| {model}-small | {statistics.median(d['unprofiled_ms'] for d in every):.1f} | "
            f"{statistics.median(d['profiled_ms'] for d in every):.1f} | "
            f"**{statistics.median(d['slowdown'] for d in every):+.1%}** | "
            f"{min(per_run):+.1%} to {max(per_run):+.1%} |"
        )


if __name__ == "__main__":
    main()
