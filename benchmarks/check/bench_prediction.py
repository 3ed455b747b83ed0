"""Validation of `commprof scale --predict` (issue 9) that can fail, as whole `commprof` processes.

    python benchmarks/check/bench_prediction.py --workdir /tmp/bench-pred

1. Step time: measure 1, 2, 3 and 4 ranks in one interleaved `commprof scale`; predict 4 from
   the runs at 1, 2 and 3 only; the predicted step must be within 15% of the measured one.
2. Best bucket_cap_mb, on a workload where it matters (tests/data/deep_mlp.py): predict the best
   cap at 4 ranks from 1, 2 and 3; then sweep 4 ranks over the candidate caps; the measured step
   at the predicted cap must be within 15% of the measured best.
Exits 1 when a goal is missed."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, when run as a file
from benchmarks.common import DEEP_MLP, commprof, read_report  # noqa: E402
from commprof.analysis.predict import CANDIDATE_CAPS_MB  # noqa: E402
from commprof.commands.scale import ScalePlan, run_scale  # noqa: E402
from commprof.config import RunConfig  # noqa: E402
from commprof.workloads import load_workload  # noqa: E402

GOAL = 0.15


def predict_from(cwd: Path, name: str, sizes: list[int], target: int, model: str, repeats: int):
    """The scale analysis re-run on the recorded runs of `sizes` only, predicting `target`."""
    base = RunConfig.from_dict(
        json.loads((cwd / "traces" / f"{name}-ws{sizes[0]}-r1" / "run.json").read_text())["config"]
    )
    workload = load_workload(model, base.model_size)
    plan = ScalePlan(
        name=name,
        configs={n: dataclasses.replace(base, procs_per_node=n, traces_dir=cwd / "traces") for n in sizes},
        repeats=repeats,
        strong=False,
        base_lr=0.1,
        predict_sizes=[target],
        link=None,
        parameters=workload.parameter_count,
        parameter_bytes=[p.numel() * p.element_size() for p in workload.model.parameters()],
    )
    with tempfile.TemporaryDirectory() as reports:
        return run_scale(plan, lambda config: config.run_dir, Path(reports))


def step_time(cwd: Path, repeats: int, steps: int) -> dict:
    commprof(
        "scale",
        "--world-sizes",
        "1,2,3,4",
        "--repeats",
        str(repeats),
        "--steps",
        str(steps),
        "--run-id",
        "steps",
        "--quiet",
        cwd=cwd,
        capture=False,
    )
    measured = next(p for p in read_report(cwd, "steps")["points"] if p["world_size"] == 4)
    report = predict_from(cwd, "steps", [1, 2, 3], 4, "mlp", repeats)
    predicted = report.predictions[0].step_ms
    return {
        "predicted_ms": predicted,
        "measured_ms": measured["step_ms"],
        "error": predicted / measured["step_ms"]["value"] - 1,
        "link": report.link,
        "compute": report.compute,
        "overhead": report.profiling_overhead,
    }


def best_bucket(cwd: Path, repeats: int, steps: int) -> dict:
    commprof(
        "scale",
        "--model",
        DEEP_MLP,
        "--world-sizes",
        "1,2,3",
        "--repeats",
        str(repeats),
        "--steps",
        str(steps),
        "--run-id",
        "buckets",
        "--quiet",
        cwd=cwd,
        capture=False,
    )
    prediction = predict_from(cwd, "buckets", [1, 2, 3], 4, DEEP_MLP, repeats).predictions[0]
    caps = [c for c in CANDIDATE_CAPS_MB if c <= 100]
    commprof(
        "sweep",
        "--model",
        DEEP_MLP,
        "--procs",
        "4",
        "--bucket-cap-mb",
        ",".join(map(str, caps)),
        "--repeats",
        str(max(3, repeats)),
        "--run-id",
        "sweep4",
        "--quiet",
        cwd=cwd,
        capture=False,
    )
    settings = read_report(cwd, "sweep4")["sweep"]["settings"]
    measured = {s["bucket_cap_mb"]: s["step_ms"]["value"] for s in settings}
    best = min(measured, key=measured.get)
    return {
        "predicted_cap": prediction.best_bucket_cap_mb,
        "predicted_step_ms": prediction.best_step_ms,
        "measured_ms": measured,
        "measured_best_cap": best,
        "loss_at_predicted": measured[prediction.best_bucket_cap_mb] / measured[best] - 1,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    steps = step_time(args.workdir, args.repeats, args.steps)
    buckets = best_bucket(args.workdir, args.repeats, args.steps)
    print(json.dumps({"step_time": steps, "best_bucket": buckets}, indent=2))
    print(
        f"step time at 4 ranks: predicted {steps['predicted_ms']:.1f} ms, measured "
        f"{steps['measured_ms']['value']:.1f} ms, error {steps['error']:+.1%} (goal within {GOAL:.0%})"
    )
    print(
        f"best bucket_cap_mb at 4 ranks: predicted {buckets['predicted_cap']:g}, measured best "
        f"{buckets['measured_best_cap']:g}; the predicted cap is {buckets['loss_at_predicted']:+.1%} from the best"
    )
    return 0 if abs(steps["error"]) <= GOAL and buckets["loss_at_predicted"] <= GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
