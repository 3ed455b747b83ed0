"""The seeds' scaling result, in shape (issue 39, item 6), on the multi-host test bed (tests/netbed.py; root).

    python benchmarks/measure/bench_scaling_links.py --workdir /tmp/bench-scaling [--slow 400] [--fast 3200]
        [--models mlp:small:32,transformer:small:16] [--repeats 2] [--steps 12]

The mLSTM study (../shared/seeds/000_*.txt) found that data parallelism scales better across nodes over InfiniBand
than over Ethernet, and that over the fast link the larger, compute-heavier model scales better. Here: weak scaling
(the same batch per rank) from one host to two, one rank per host pinned to a core of its own (taskset, one thread:
this machine has 2 cores), for each model (name:size:batch) at a slow and a fast link between the hosts.
Efficiency = the one-host step / the two-host step (median profiled step, slowest rank; the same batch per rank, so
per-rank throughput kept). Beside each measured two-host step, commprof's prediction of it from the run at the
other link (the report's what-if model, analysis/what_if.py, at the ratio of the two links' probed bandwidths).
Runs interleave (per repeat: each model at one host, slow, fast). Prints a Markdown table, says whether each of the
two claims holds, writes scaling-links.json and scaling-links.png in --workdir."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, when run as a file
from commprof.analysis.what_if import link_what_if, measured_profile  # noqa: E402
from commprof.results.store import load_report  # noqa: E402
from commprof.trace.load import load_run  # noqa: E402
from tests.netbed import commprof_argv, netbed, unavailable  # noqa: E402


def run(workdir: Path, name: str, model: str, size: str, batch: int, hosts: int, rate: float | None, steps: int):
    """One job, one rank per host: (median profiled step ms, its report, the folder of host 0's traces)."""
    with netbed(hosts, rate, workdir / name) as bed:
        args = ["run", "--nodes", str(hosts), "--procs", "1", "--run-id", name, "--model", model, "--model-size", size]
        args += ["--batch-size", str(batch), "--steps", str(steps), "--schedule", f"3,1,{steps - 5}", "--quiet"]
        if hosts > 1:
            args += ["--rdzv-endpoint", bed.rdzv_endpoint]
        commands = [["taskset", "-c", str(i % 2), *commprof_argv(*args)] for i in range(hosts)]
        done = bed.run_on_each(commands, timeout=1200, env={"OMP_NUM_THREADS": "1"})
        if any(d.returncode for d in done):
            sys.exit(f"{name}: " + " | ".join(d.stderr.strip()[-400:] for d in done))
        folder = bed.hosts[0].folder
        report = load_report(folder / "reports" / name / "report.json")
        step = max(r.step_time_ms.median for r in report.ranks)
        print(f"{name}: {step:.0f} ms per profiled step", flush=True)
        return step, report, folder / "traces" / name


def predicted_from(report, traces: Path, other_busbw: float) -> float | None:
    """The two-host step on a link of `other_busbw`, from this run's own traces and probe."""
    if report.network is None:
        return None
    between = next((t for t in report.network.tiers if t.tier == "network"), None)
    if between is None or between.busbw_gbps <= 0:
        return None
    trace = load_run([traces], workers=1)
    rank0 = [(r, list(r.steps)) for r in trace.ranks if r.rank == 0]
    factor = other_busbw / between.busbw_gbps
    rows = link_what_if(measured_profile(rank0), report.network.tiers, (1.0, factor))
    if len(rows) < 2:
        return None
    measured_here = max(r.step_time_ms.median for r in report.ranks)
    return measured_here + rows[1].step_ms - rows[0].step_ms  # the model's change, on this run's measured step


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--slow", type=float, default=400.0, help="Mbit/s")
    parser.add_argument("--fast", type=float, default=3200.0, help="Mbit/s")
    parser.add_argument("--models", default="mlp:small:32,transformer:small:16")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--steps", type=int, default=12)
    args = parser.parse_args()
    why = unavailable()
    if why:
        sys.exit(f"cannot run: {why}")
    links = {"slow": args.slow, "fast": args.fast}
    results = []
    for spec in args.models.split(","):
        model, size, batch = spec.split(":")
        one, two, guess = [], {k: [] for k in links}, {k: [] for k in links}
        for repeat in range(args.repeats):
            tag = f"{model}-{size}-r{repeat}"
            one.append(run(args.workdir, f"{tag}-1host", model, size, int(batch), 1, None, args.steps)[0])
            measured = {k: run(args.workdir, f"{tag}-{k}", model, size, int(batch), 2, r, args.steps)
                        for k, r in links.items()}  # fmt: skip
            busbw = {
                k: next(t.busbw_gbps for t in m[1].network.tiers if t.tier == "network") for k, m in measured.items()
            }
            for k in links:
                two[k].append(measured[k][0])
                other = "fast" if k == "slow" else "slow"
                guess[k].append(predicted_from(measured[other][1], measured[other][2], busbw[k]))
        base = statistics.median(one)
        row = {"model": f"{model} {size}, batch {batch}", "one_host_ms": one}
        for k in links:
            step = statistics.median(two[k])
            predictions = [g for g in guess[k] if g is not None]
            efficiency = base / statistics.median(predictions) if predictions else None
            row[k] = {"two_host_ms": two[k], "efficiency": base / step, "predicted_ms": predictions,
                      "predicted_efficiency": efficiency}  # fmt: skip
        results.append(row)
    print("\n| model | 1 host ms | link | 2 hosts ms | efficiency | predicted ms | predicted efficiency |")
    print("|---|---|---|---|---|---|---|")
    for row in results:
        for k in links:
            cell = row[k]
            pred = statistics.median(cell["predicted_ms"]) if cell["predicted_ms"] else float("nan")
            print(f"| {row['model']} | {statistics.median(row['one_host_ms']):.0f} | {k} ({links[k]:g} Mbit/s) | "
                  f"{statistics.median(cell['two_host_ms']):.0f} | {cell['efficiency']:.0%} | {pred:.0f} | "
                  f"{(cell['predicted_efficiency'] or float('nan')):.0%} |")  # fmt: skip
    fast_better = all(r["fast"]["efficiency"] > r["slow"]["efficiency"] for r in results)
    heavier = max(results, key=lambda r: statistics.median(r["one_host_ms"]))
    lighter = min(results, key=lambda r: statistics.median(r["one_host_ms"]))
    heavier_better = heavier["fast"]["efficiency"] > lighter["fast"]["efficiency"]
    print(f"\nclaim 1, every model scales better over the fast link: {'holds' if fast_better else 'does not hold'}")
    print(f"claim 2, over the fast link the compute-heavier model ({heavier['model']}) scales better than "
          f"{lighter['model']}: {'holds' if heavier_better else 'does not hold'}")  # fmt: skip
    args.workdir.mkdir(parents=True, exist_ok=True)
    out = {"links_mbit": links, "results": results, "claims": {"fast_link_better": fast_better,
           "heavier_model_better_on_fast_link": heavier_better}}  # fmt: skip
    (args.workdir / "scaling-links.json").write_text(json.dumps(out, indent=2))
    plot(results, links, args.workdir / "scaling-links.png")
    return 0


def plot(results: list[dict], links: dict[str, float], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    width = 0.38
    for i, (k, rate) in enumerate(links.items()):
        xs = [j + (i - 0.5) * width for j in range(len(results))]
        ax.bar(xs, [100 * r[k]["efficiency"] for r in results], width, label=f"measured, {k} ({rate:g} Mbit/s)")
        predicted = [100 * (r[k]["predicted_efficiency"] or 0) for r in results]
        ax.scatter(xs, predicted, color="black", marker="_", s=400, zorder=3, label="predicted" if i else None)
    ax.set_xticks(range(len(results)), [r["model"] for r in results])
    ax.set_ylabel("scaling efficiency, 1 to 2 hosts (%)")
    ax.set_ylim(0, 110)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    sys.exit(main())
