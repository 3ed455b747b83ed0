"""Sweep efficiency and tune quality (issue 4), as whole `commprof` processes.

    python benchmarks/measure/bench_sweep.py --workdir /tmp/bench-sweep

Efficiency: one sweep of K bucket sizes against (one startup + the sum of its measured steps),
where a startup is the wall time of a minimal `commprof run`; and against K separate runs.
Quality: an exhaustive sweep of a workload where bucket size matters (tests/data/deep_mlp.py)
against `commprof tune`; tune's pick must be within 3% of the exhaustive best, judged on the
exhaustive sweep's own medians. Exits 1 when a goal is missed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, when run as a file
from benchmarks.common import DEEP_MLP, commprof, read_report  # noqa: E402

EFFICIENCY_SIZES = ["1", "5", "25", "100"]
# Every size `commprof tune` can recommend here (its coarse grid 1, 5, 25, 100 and the refinements
# around each: 0.5, 2.2, 11, 50), plus small sizes where this workload slows down.
EXHAUSTIVE_SIZES = ["0.05", "0.25", "0.5", "1", "2.2", "5", "11", "25", "50", "100"]


def timed(cwd: Path, *args: str) -> float:
    """The wall seconds of `commprof ARGS --quiet`, run in cwd."""
    start = time.perf_counter()
    commprof(*args, "--quiet", cwd=cwd)
    return time.perf_counter() - start


def efficiency(cwd: Path, repeats: int, steps_per_repeat: int) -> dict:
    startup = timed(cwd, "run", "--steps", "1", "--schedule", "0,0,1", "--run-id", "startup")
    wall = timed(
        cwd,
        "sweep",
        "--bucket-cap-mb",
        ",".join(EFFICIENCY_SIZES),
        "--repeats",
        str(repeats),
        "--steps-per-repeat",
        str(steps_per_repeat),
        "--run-id",
        "eff-sweep",
    )
    measured = read_report(cwd, "eff-sweep")["sweep"]["timings"]["measured_s"]
    steps = repeats * steps_per_repeat
    separate = sum(
        timed(
            cwd,
            "run",
            "--bucket-cap-mb",
            mb,
            "--steps",
            str(steps + 4),
            "--schedule",
            "1,1,2",
            "--run-id",
            f"eff-run-{mb}",
        )
        for mb in EFFICIENCY_SIZES
    )
    return {
        "settings": len(EFFICIENCY_SIZES),
        "startup_s": startup,
        "measured_s": measured,
        "sweep_wall_s": wall,
        "ratio": wall / (startup + measured),
        "separate_runs_wall_s": separate,
    }


def quality(cwd: Path, repeats: int, steps_per_repeat: int) -> dict:
    common = [
        "--model",
        DEEP_MLP,
        "--batch-size",
        "16",
        "--repeats",
        str(repeats),
        "--steps-per-repeat",
        str(steps_per_repeat),
    ]
    timed(cwd, "sweep", "--bucket-cap-mb", ",".join(EXHAUSTIVE_SIZES), *common, "--run-id", "exhaustive")
    timed(cwd, "tune", *common, "--run-id", "tuned")
    settings = read_report(cwd, "exhaustive")["sweep"]["settings"]
    exhaustive = {s["bucket_cap_mb"]: s["step_ms"]["value"] for s in settings}
    tuned = read_report(cwd, "tuned")["sweep"]
    # what tune tells the user to use: its best setting when significant, else the default
    chosen = tuned["best"] if tuned["paste"] else tuned["baseline"]
    pick = next(s["bucket_cap_mb"] for s in tuned["settings"] if s["label"] == chosen)
    best = min(exhaustive, key=exhaustive.get)
    return {
        "exhaustive_ms": exhaustive,
        "exhaustive_best_mb": best,
        "tune_pick_mb": pick,
        "tune_trials": len(tuned["settings"]),
        "exhaustive_trials": len(exhaustive),
        "pick_vs_best": exhaustive[pick] / exhaustive[best] if pick in exhaustive else None,
        "recommendation": tuned["recommendation"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps-per-repeat", type=int, default=4)
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    result = {
        "efficiency": efficiency(args.workdir, args.repeats, args.steps_per_repeat),
        "quality": quality(args.workdir, args.repeats, args.steps_per_repeat),
    }
    print(json.dumps(result, indent=1))
    quality_ratio = result["quality"]["pick_vs_best"]
    ok = result["efficiency"]["ratio"] <= 1.3 and quality_ratio is not None and quality_ratio <= 1.03
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
