"""The whole-run record's cost (issue 31): `commprof run` with it (the default) against `--no-whole-run`.

    python benchmarks/bench_whole_run.py --workdir /tmp/bench-whole-run [--rounds 8] [--steps 60]
        [--workloads mlp,transformer,script] [--device cpu|cuda]

Each round launches every workload twice, once with the record and once without, in alternating order (A B, B A,
...). Workloads: the built-in mlp and transformer (`--model`, small), timed by commprof itself (run.json's per-rank
step_ms: per step the slowest rank's time), and benchmarks/timed_script.py under `commprof run --`, which times its
own optimizer steps (wall clock between them, rank 0: commprof's work between steps included). The default
schedule profiles steps 8-17; the steps compared are those from SKIP on, after the window and its trace export.
Per launch: the median of those steps; per round: with / without. Cost: the median of the round ratios - 1, with
its distribution-free 95% interval (`median_ci`). Goal: at most 1% of the step for every workload; exits 1
otherwise. --device cpu: 2 Gloo ranks (`--procs 2`); cuda: one GPU (`--gpus 1`, NCCL: with one rank DDP still
calls the comm hook, so the recorder's cost is measured). Every launch runs in --workdir (traces/, reports/)."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from commprof.analysis.stats import median_ci  # noqa: E402
from commprof.launch.runlog import read_run_json  # noqa: E402
from commprof.results.step_ledger import ledger_path  # noqa: E402

SCRIPT = REPO / "benchmarks" / "timed_script.py"
SKIP = 26  # past the profiler's window (wait 5 + warmup 2 + active 10), its trace export and the step after it
GOAL = 0.01
WORKLOADS = "mlp,transformer,script"
MODES = ("on", "off")


def command(workload: str, mode: str, name: str, steps: int, device: str, out: Path) -> list[str]:
    ranks = ["--gpus", "1"] if device == "cuda" else ["--procs", "2", "--device", "cpu"]
    run = [sys.executable, "-m", "commprof", "run", *ranks, "--run-id", name, "--quiet"]
    if mode == "off":
        run.append("--no-whole-run")
    if workload == "script":
        return [*run, "--", str(SCRIPT), "--steps", str(steps), "--out", str(out), "--device", device]
    return [*run, "--model", workload, "--steps", str(steps)]


def launch(workload: str, mode: str, workdir: Path, name: str, steps: int, device: str) -> list[float]:
    """The launch's step times (ms), every step: the script's own (rank 0), or per step the slowest rank's."""
    out = workdir / f"{name}.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run(
        command(workload, mode, name, steps, device, out), cwd=workdir, env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        sys.exit(f"{name} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    run_dir = workdir / "traces" / name
    if ledger_path(run_dir, 0).exists() != (mode == "on"):
        sys.exit(f"{name}: the whole-run record is {'missing' if mode == 'on' else 'there'} ({run_dir})")
    if workload == "script":
        return json.loads(out.read_text())
    record = read_run_json(run_dir)
    assert record is not None and record.ranks, f"{name}: no run.json in {run_dir}"
    return [max(per_rank) for per_rank in zip(*(r.step_ms for r in record.ranks), strict=True)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--workloads", default=WORKLOADS)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    args = parser.parse_args()
    if args.steps <= SKIP:
        parser.error(f"--steps must be more than {SKIP}: the steps compared are those from {SKIP} on")
    args.workdir.mkdir(parents=True, exist_ok=True)
    workloads = args.workloads.split(",")
    ms: dict[str, dict[str, list[float]]] = {w: {m: [] for m in MODES} for w in workloads}
    load: dict[str, dict[str, list[float]]] = {w: {m: [] for m in MODES} for w in workloads}  # the host's, after
    for round_ in range(args.rounds):
        order = MODES if round_ % 2 == 0 else MODES[::-1]
        for workload in workloads:
            for mode in order:
                steps = launch(workload, mode, args.workdir, f"{workload}-{mode}-{round_}", args.steps, args.device)
                ms[workload][mode].append(statistics.median(steps[SKIP:]))
                load[workload][mode].append(os.getloadavg()[0])
            on, off = ms[workload]["on"][-1], ms[workload]["off"][-1]
            print(
                f"round {round_} {workload}: on {on:.1f} ms, off {off:.1f} ms per step ({on / off - 1:+.1%}; "
                f"{order[0]} first; steps {SKIP}-{args.steps - 1})",
                flush=True,
            )
    results = []
    for workload in workloads:
        on, off = ms[workload]["on"], ms[workload]["off"]
        cost = median_ci([a / b - 1 for a, b in zip(on, off, strict=True)])
        results.append(
            {
                "workload": workload,
                "device": args.device,
                "cost": [cost.value, cost.low, cost.high],
                "rounds": args.rounds,
                "on_ms": statistics.median(on),
                "off_ms": statistics.median(off),
                "on": on,
                "off": off,
                "load_on": load[workload]["on"],
                "load_off": load[workload]["off"],
            }
        )
    (args.workdir / "whole-run-results.json").write_text(json.dumps(results, indent=2))
    print(f"| workload | cost of the whole-run record (median of {args.rounds} rounds, 95% CI) | ms/step off | on |")
    print("|---|---|---|---|")
    for r in results:
        value, low, high = r["cost"]
        cost = f"**{value:+.1%}** [{low:+.1%}, {high:+.1%}]"
        print(f"| {r['workload']} | {cost} | {r['off_ms']:.1f} | {r['on_ms']:.1f} |")
    print(json.dumps({"goal": GOAL, "results": [{k: r[k] for k in ("workload", "cost", "off_ms")} for r in results]}))
    sys.exit(0 if all(r["cost"][0] <= GOAL for r in results) else 1)


if __name__ == "__main__":
    main()
