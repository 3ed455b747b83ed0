"""Profiling overhead on a user's script (issue 15): the same script under torchrun and under `commprof run --`.

    python benchmarks/measure/bench_script_overhead.py --workdir /tmp/bench-script [--pairs 6] [--steps 60]

benchmarks/workloads/timed_script.py times its own optimizer steps. Each pair runs it once under torchrun
(`python -m torch.distributed.run --standalone --nproc-per-node 2`) and once under
`commprof run --procs 2 --` (default schedule: the profiler stops after step 17), in alternating order
(A B, B A, ...). Per launch: the median of the steps after SKIP; per pair: commprof / torchrun. Overhead:
the median of the pair ratios - 1 with a bootstrap 95% CI. Goal: at most 3%, as for built-in runs."""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, when run as a file
from benchmarks.common import WORKLOADS, commprof  # noqa: E402
from commprof.analysis.stats import median_ci  # noqa: E402

SCRIPT = WORKLOADS / "timed_script.py"
SKIP = 25  # past the profiler's window (wait 5 + warmup 2 + active 10) and its trace export
GOAL = 0.03


def launch(mode: str, workdir: Path, name: str, steps: int) -> float:
    out = workdir / f"{name}.json"
    script = [str(SCRIPT), "--steps", str(steps), "--out", str(out)]
    if mode == "torchrun":
        command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", *script]
        subprocess.run(command, cwd=workdir, check=True, capture_output=True)
    else:
        commprof("run", "--procs", "2", "--run-id", name, "--quiet", "--", *script, cwd=workdir)
    return statistics.median(json.loads(out.read_text())[SKIP:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--pairs", type=int, default=6)
    parser.add_argument("--steps", type=int, default=60)
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    ratios = []
    for pair in range(args.pairs):
        order = ("torchrun", "commprof") if pair % 2 == 0 else ("commprof", "torchrun")
        ms = {mode: launch(mode, args.workdir, f"{mode}-{pair}", args.steps) for mode in order}
        ratios.append(ms["commprof"] / ms["torchrun"])
        print(
            f"pair {pair}: torchrun {ms['torchrun']:.1f} ms, commprof {ms['commprof']:.1f} ms per step "
            f"(steps {SKIP}-{args.steps - 1})",
            flush=True,
        )
    overhead = median_ci([r - 1 for r in ratios])
    print(
        f"overhead outside the profiler's window: {overhead.value:+.1%} [{overhead.low:+.1%}, {overhead.high:+.1%}] "
        f"over {args.pairs} pairs (goal <= {GOAL:.0%})"
    )
    sys.exit(0 if overhead.value <= GOAL else 1)


if __name__ == "__main__":
    main()
