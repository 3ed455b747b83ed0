"""Predicted against measured: each built-in workload, a user script and the tiny-cap positive control run with
commprof's defaults, then `commprof advise` reruns the settings its findings predict to be faster against the run's
own, interleaved.

    python benchmarks/measure/bench_advice.py --workdir /tmp/bench-advice [--models mlp,convnet,transformer,mlstm]
        [--repeats 2]

2 Gloo ranks on CPU. The script is tests/data/scripts/train_epochs.py --width 2048 (plain DDP, 4.3 M
parameters, its own 1 MB buckets), 30 optimizer steps; the control is tests/data/deep_mlp.py with
--bucket-cap-mb 0.001 (64 all-reduces a step). Prints a Markdown table: per workload, every finding, and for each
setting finding the predicted gain and the measured one (ms per step, 95% CIs), the error and the verdict; then, per
kind of finding, how often advise confirmed it."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, when run as a file
from benchmarks.common import DEEP_MLP, TESTS_DATA, commprof, read_report  # noqa: E402
from commprof.render.findings_text import advice_verdict  # noqa: E402

MODELS = ("mlp", "convnet", "transformer", "mlstm")
SCRIPT = TESTS_DATA / "scripts" / "train_epochs.py"


def ci(estimate: dict) -> str:
    return f"{estimate['value']:+.1f} ({estimate['low']:+.1f} to {estimate['high']:+.1f})"


def rows(workdir: Path, name: str, run_args: list[str]) -> list[str]:
    done = commprof("run", "--run-id", name, "--quiet", *run_args, cwd=workdir, check=False)
    if done.returncode:
        return [f"| {name} | run failed: {done.stderr.strip().splitlines()[-1]} | | | | |"]
    report = read_report(workdir, name)
    step = sorted(r["step_time_ms"]["median"] for r in report["ranks"])[len(report["ranks"]) // 2]
    others = [
        f"{f['kind']} ({ci(f['gain_ms'])})" if f["gain_ms"] else f["kind"]
        for f in report["findings"]
        if not f["setting"]
    ]
    lines = [f"| {name} | {step:.1f} ms; other findings: {', '.join(others) or 'none'} | | | | |"]
    if not any(f["setting"] for f in report["findings"]):
        return lines + ["| | no setting finding | | | | |"]
    advised = commprof("advise", name, "--json", cwd=workdir, check=False)
    if advised.returncode:
        return lines + [f"| | advise failed: {advised.stderr.strip().splitlines()[-1]} | | | | |"]
    for setting in json.loads(advised.stdout)["sweep"]["settings"]:
        predicted, measured = setting["predicted_gain_ms"], setting["gain_ms"]
        if predicted:
            inside = predicted["low"] <= measured["value"] <= predicted["high"]
            TALLY.append(
                (kind_of(report, setting), advice_verdict(setting["significant"], setting["speedup"]["value"]), inside)
            )
            lines.append(
                f"| | {setting['label']} | {ci(predicted)} | {ci(measured)} | "
                f"{measured['value'] - predicted['value']:+.1f} | "
                f"{advice_verdict(setting['significant'], setting['speedup']['value'])} |"
            )
    return lines


TALLY: list[tuple[str, str, bool]] = []  # (finding kind, verdict, measured gain inside the predicted interval)


def kind_of(report: dict, setting: dict) -> str:
    """The kind of the finding that advised this setting."""
    options = setting["options"]
    for finding in report["findings"]:
        if finding["setting"] and all(options.get(k) == v for k, v in finding["setting"].items()):
            return finding["kind"]
    return "?"


def summary() -> list[str]:
    lines = [
        "",
        "| finding kind | checked | holds (faster beyond the noise and 3%) | measured inside the predicted CI |",
        "|---|---|---|---|",
    ]
    for kind in sorted({k for k, _, _ in TALLY}):
        rows = [t for t in TALLY if t[0] == kind]
        holds = sum(v.startswith("holds") for _, v, _ in rows)
        inside = sum(i for _, _, i in rows)
        lines.append(f"| {kind} | {len(rows)} | {holds} | {inside} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--repeats", type=int, default=1, help="each workload run (and advised) this many times")
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    print(
        "| workload | finding / setting | predicted gain ms (95% CI) | measured gain ms (95% CI) | error ms | verdict |"
    )
    print("|---|---|---|---|---|---|")
    workloads = [(model, ["--model", model]) for model in filter(None, args.models.split(","))]
    workloads += [
        ("script", ["--max-steps", "30", "--", str(SCRIPT), "--epochs", "5", "--width", "2048"]),
        ("tiny-cap", ["--model", DEEP_MLP, "--bucket-cap-mb", "0.001"]),
    ]
    for i in range(args.repeats):
        for name, run_args in workloads:
            print("\n".join(rows(args.workdir, f"{name}-{i}", run_args)), flush=True)
    print("\n".join(summary()))


if __name__ == "__main__":
    main()
