"""Validation of the report's what-if links (issue 39, item 5) on the multi-host test bed, as whole `commprof`
processes: two hosts (network namespaces, tests/netbed.py; needs root), one rank each, joined by a tc-limited link.

    python benchmarks/check/bench_what_if_links.py --workdir /tmp/bench-what-if [--rate 400] [--factors 0.25,4]
        [--repeats 2] [--model mlp] [--steps 14]

From runs at --rate Mbit/s (the reference), the report's network section predicts the step on a link `factor`
times as fast; then runs at rate x factor measure it. The quantity on both sides is the same: the report's "as
measured" row (the median profiled step, from the traces' step profile) against the reference's predicted row. Runs
are interleaved (reference, each factor; then again), the prediction and the measurement are each the median over
the repeats. Goal: every prediction within 15% of the measurement; exits 1 otherwise. Prints a Markdown table
and writes what-if-results.json in --workdir."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, when run as a file
from commprof.results.store import load_report  # noqa: E402
from tests.netbed import commprof_argv, netbed, unavailable  # noqa: E402

GOAL = 0.15


def run_two_hosts(workdir: Path, rate: float, name: str, model: str, steps: int) -> dict[float, float]:
    """One two-host job at `rate` Mbit/s: its report's what-if rows, factor -> step ms."""
    with netbed(2, rate, workdir / name) as bed:
        args = ["run", "--nodes", "2", "--procs", "1", "--rdzv-endpoint", bed.rdzv_endpoint, "--run-id", name]
        args += ["--model", model, "--steps", str(steps), "--schedule", f"3,1,{steps - 5}", "--quiet"]
        started = time.monotonic()
        done = bed.run_on_each([commprof_argv(*args)] * 2, timeout=900)
        if any(d.returncode for d in done):
            sys.exit(f"{name}: " + " | ".join(d.stderr.strip()[-400:] for d in done))
        network = load_report(bed.hosts[0].folder / "reports" / name / "report.json").network
        rows = {w.factor: w.step_ms for w in network.what_if} if network else {}
        print(f"{name}: {rate:g} Mbit/s, measured {rows.get(1.0, float('nan')):.0f} ms per profiled step "
              f"({time.monotonic() - started:.0f} s)", flush=True)  # fmt: skip
        return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--rate", type=float, default=400.0)
    parser.add_argument("--factors", default="0.25,4")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--model", default="mlp")
    parser.add_argument("--steps", type=int, default=14)
    args = parser.parse_args()
    why = unavailable()
    if why:
        sys.exit(f"cannot run: {why}")
    factors = [float(f) for f in args.factors.split(",")]
    predicted: dict[float, list[float]] = {f: [] for f in factors}
    measured: dict[float, list[float]] = {f: [] for f in factors}
    reference: list[float] = []
    for repeat in range(args.repeats):
        rows = run_two_hosts(args.workdir, args.rate, f"ref-r{repeat}", args.model, args.steps)
        reference.append(rows[1.0])
        for factor in factors:
            predicted[factor].append(rows[factor])
            other = run_two_hosts(args.workdir, args.rate * factor, f"x{factor:g}-r{repeat}", args.model, args.steps)
            measured[factor].append(other[1.0])
    results = []
    print(f"\n| link | predicted from {args.rate:g} Mbit/s, ms | measured, ms | error |\n|---|---|---|---|")
    print(f"| {args.rate:g} Mbit/s (reference) | - | {statistics.median(reference):.0f} | - |")
    for factor in factors:
        guess, seen = statistics.median(predicted[factor]), statistics.median(measured[factor])
        error = guess / seen - 1
        results.append({"factor": factor, "rate_mbit": args.rate * factor, "predicted_ms": predicted[factor],
                        "measured_ms": measured[factor], "error": error})  # fmt: skip
        print(f"| {args.rate * factor:g} Mbit/s ({factor:g}x) | {guess:.0f} | {seen:.0f} | {error:+.1%} |")
    args.workdir.mkdir(parents=True, exist_ok=True)
    (args.workdir / "what-if-results.json").write_text(
        json.dumps({"goal": GOAL, "rate_mbit": args.rate, "reference_ms": reference, "results": results}, indent=2)
    )
    return 0 if all(abs(r["error"]) <= GOAL for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
