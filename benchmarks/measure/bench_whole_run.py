"""The whole-run record's cost (issue 31): `commprof run` with it (the default) against `--no-whole-run`.

    python benchmarks/measure/bench_whole_run.py --workdir /tmp/bench-whole-run [--rounds 8] [--steps 60]
        [--workloads mlp,transformer,script,mesh] [--device cpu|cuda]

Each round launches every workload twice, once with the record and once without, in alternating order (A B, B A,
...). Workloads: the built-in mlp and transformer (`--model`, small), timed by commprof itself (run.json's per-rank
step_ms: per step the slowest rank's time), and benchmarks/workloads/timed_script.py under `commprof run --`, which
times its own optimizer steps (wall clock between them, rank 0: commprof's work between steps included), and
benchmarks/workloads/timed_mesh.py (FSDP2 x TP on a 2 x 2 mesh, 4 ranks: every collective timed at its call) the
same way. The default
schedule profiles steps 8-17; the steps compared are those from SKIP on, after the window and its trace export.
Per launch: the median of those steps; per round: with / without. Cost: the median of the round ratios - 1, with
its distribution-free 95% interval (`median_ci`); also over the rounds during whose two launches other processes
used under QUIET of the cores (/proc/stat, less this benchmark's own children). Goal: at most 1% of the step for
every workload; exits 1 otherwise. --device cpu: 2 Gloo ranks (`--procs 2`); cuda: one GPU (`--gpus 1`, NCCL:
with one rank DDP still calls the comm hook, so the recorder's cost is measured). Every launch runs in --workdir
(traces/, reports/)."""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, when run as a file
from benchmarks.common import REPO, WORKLOADS, commprof  # noqa: E402
from commprof.analysis.stats import median_ci  # noqa: E402
from commprof.launch.runlog import read_run_json  # noqa: E402
from commprof.results.step_ledger import ledger_path  # noqa: E402

SCRIPT = WORKLOADS / "timed_script.py"
MESH = WORKLOADS / "timed_mesh.py"  # FSDP2 x TP on 4 ranks: every collective timed at its call (issue 70)
SKIP = 26  # past the profiler's window (wait 5 + warmup 2 + active 10), its trace export and the step after it
GOAL = 0.01
WORKLOADS = "mlp,transformer,script"
MODES = ("on", "off")
QUIET = 0.1  # a launch during which other processes used less than this share of the machine's cores


def busy_s() -> float:
    """CPU seconds every process on this machine has used (/proc/stat; 0 where there is none)."""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    except OSError:
        return 0.0
    user, nice, system, _idle, _iowait, irq, softirq = (int(x) for x in fields[:7])
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def children_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def command(workload: str, mode: str, name: str, steps: int, device: str, out: Path) -> list[str]:
    """The arguments of `commprof` for one launch."""
    ranks = ["--gpus", "1"] if device == "cuda" else ["--procs", "2", "--device", "cpu"]
    run = ["run", *ranks, "--run-id", name, "--quiet"]
    if mode == "off":
        run.append("--no-whole-run")
    if workload == "script":
        return [*run, "--", str(SCRIPT), "--steps", str(steps), "--out", str(out), "--device", device]
    if workload == "mesh":
        run[run.index("--procs") + 1] = "4"
        return [*run, "--", str(MESH), "--steps", str(steps), "--out", str(out)]
    return [*run, "--model", workload, "--steps", str(steps)]


def launch(workload: str, mode: str, workdir: Path, name: str, steps: int, device: str) -> tuple[list[float], float]:
    """The launch's step times (ms), every step: the script's own (rank 0), or per step the slowest rank's; and the
    share of the machine's cores other processes used meanwhile (this machine is shared: a launch slowed by them
    is noted, and the cost also given on the rounds that none slowed)."""
    out = workdir / f"{name}.json"
    before = (time.perf_counter(), busy_s(), children_s())
    done = commprof(*command(workload, mode, name, steps, device, out), cwd=workdir, code=REPO, check=False)
    wall, busy, ours = (
        end - start for end, start in zip((time.perf_counter(), busy_s(), children_s()), before, strict=True)
    )
    others = max(0.0, busy - ours) / (wall * (os.cpu_count() or 1))
    if done.returncode != 0:
        sys.exit(f"{name} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    run_dir = workdir / "traces" / name
    if ledger_path(run_dir, 0).exists() != (mode == "on"):
        sys.exit(f"{name}: the whole-run record is {'missing' if mode == 'on' else 'there'} ({run_dir})")
    if workload in ("script", "mesh"):
        return json.loads(out.read_text()), others
    record = read_run_json(run_dir)
    assert record is not None and record.ranks, f"{name}: no run.json in {run_dir}"
    return [max(per_rank) for per_rank in zip(*(r.step_ms for r in record.ranks), strict=True)], others


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
    args.workdir = args.workdir.resolve()  # the launches run in it: the script's --out must not be relative
    args.workdir.mkdir(parents=True, exist_ok=True)
    workloads = args.workloads.split(",")
    ms: dict[str, dict[str, list[float]]] = {w: {m: [] for m in MODES} for w in workloads}
    others: dict[str, dict[str, list[float]]] = {w: {m: [] for m in MODES} for w in workloads}
    for round_ in range(args.rounds):
        order = MODES if round_ % 2 == 0 else MODES[::-1]
        for workload in workloads:
            for mode in order:
                name = f"{workload}-{mode}-{round_}"
                steps, share = launch(workload, mode, args.workdir, name, args.steps, args.device)
                ms[workload][mode].append(statistics.median(steps[SKIP:]))
                others[workload][mode].append(share)
            on, off = ms[workload]["on"][-1], ms[workload]["off"][-1]
            on_others, off_others = others[workload]["on"][-1], others[workload]["off"][-1]
            print(
                f"round {round_} {workload}: on {on:.1f} ms, off {off:.1f} ms per step ({on / off - 1:+.1%}; "
                f"{order[0]} first; steps {SKIP}-{args.steps - 1}; other processes used {on_others:.0%} and "
                f"{off_others:.0%} of the cores)",
                flush=True,
            )
    results = [summary(w, ms[w], others[w], args) for w in workloads]
    (args.workdir / "whole-run-results.json").write_text(json.dumps(results, indent=2))
    print(
        f"| workload | cost of the whole-run record, {args.rounds} rounds (95% CI) | "
        f"rounds with other processes under {QUIET:.0%} | their cost | ms/step off | on |"
    )
    print("|---|---|---|---|---|---|")
    for r in results:
        quiet = (
            f"{r['quiet_cost'][0]:+.1%} [{r['quiet_cost'][1]:+.1%}, {r['quiet_cost'][2]:+.1%}]"
            if r["quiet_cost"]
            else ""
        )
        print(
            f"| {r['workload']} | **{r['cost'][0]:+.1%}** [{r['cost'][1]:+.1%}, {r['cost'][2]:+.1%}] | "
            f"{r['quiet_rounds']} | {quiet} | {r['off_ms']:.1f} | {r['on_ms']:.1f} |"
        )
    keys = ("workload", "cost", "quiet_rounds", "quiet_cost", "off_ms")
    print(json.dumps({"goal": GOAL, "results": [{k: r[k] for k in keys} for r in results]}))
    sys.exit(0 if all(r["cost"][0] <= GOAL for r in results) else 1)


def summary(
    workload: str, ms: dict[str, list[float]], others: dict[str, list[float]], args: argparse.Namespace
) -> dict:
    """The cost over every round, and over the rounds in which other processes used under QUIET of the cores during
    both launches (chosen by what ran beside them, not by their times)."""
    ratios = [a / b - 1 for a, b in zip(ms["on"], ms["off"], strict=True)]
    quiet = [r for r, a, b in zip(ratios, others["on"], others["off"], strict=True) if max(a, b) < QUIET]
    cost = median_ci(ratios)
    quiet_cost = median_ci(quiet) if quiet else None
    return {
        "workload": workload,
        "device": args.device,
        "steps": [SKIP, args.steps - 1],
        "rounds": args.rounds,
        "cost": [cost.value, cost.low, cost.high],
        "quiet_rounds": len(quiet),
        "quiet_cost": [quiet_cost.value, quiet_cost.low, quiet_cost.high] if quiet_cost else None,
        "on_ms": statistics.median(ms["on"]),
        "off_ms": statistics.median(ms["off"]),
        "on": ms["on"],
        "off": ms["off"],
        "others_on": others["on"],
        "others_off": others["off"],
    }


if __name__ == "__main__":
    main()
