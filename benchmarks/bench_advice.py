"""Predicted against measured: each built-in workload and a user script run once with commprof's defaults,
then `commprof advise` reruns the settings its findings predict to be faster against its own, interleaved.

    python benchmarks/bench_advice.py --workdir /tmp/bench-advice [--models mlp,convnet,transformer,mlstm]

2 Gloo ranks on CPU. The script is tests/data/scripts/train_epochs.py --width 2048 (plain DDP, 4.3 M
parameters, its own 1 MB buckets), 30 optimizer steps. `--models ""` runs the script alone. Prints a Markdown table: per workload, every finding, and for each setting finding the
predicted gain and the measured one (ms per step, 95% CIs), the error and the verdict."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from commprof.render.tables import advice_verdict
from commprof.results.common import Estimate

MODELS = ("mlp", "convnet", "transformer", "mlstm")
SCRIPT = Path(__file__).resolve().parent.parent / "tests" / "data" / "scripts" / "train_epochs.py"


def commprof(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "commprof", *args], cwd=workdir, capture_output=True, text=True)


def ci(estimate: dict) -> str:
    return f"{estimate['value']:+.1f} ({estimate['low']:+.1f} to {estimate['high']:+.1f})"


def rows(workdir: Path, name: str, run_args: list[str]) -> list[str]:
    done = commprof(workdir, "run", "--run-id", name, "--quiet", *run_args)
    if done.returncode:
        return [f"| {name} | run failed: {done.stderr.strip().splitlines()[-1]} | | | | |"]
    report = json.loads((workdir / "reports" / name / "report.json").read_text())
    step = sorted(r["step_time_ms"]["median"] for r in report["ranks"])[len(report["ranks"]) // 2]
    others = [f"{f['kind']} ({ci(f['gain_ms'])})" if f["gain_ms"] else f["kind"]
              for f in report["findings"] if not f["setting"]]
    lines = [f"| {name} | {step:.1f} ms; other findings: {', '.join(others) or 'none'} | | | | |"]
    if not any(f["setting"] for f in report["findings"]):
        return lines + ["| | no setting finding | | | | |"]
    advised = commprof(workdir, "advise", name, "--json")
    if advised.returncode:
        return lines + [f"| | advise failed: {advised.stderr.strip().splitlines()[-1]} | | | | |"]
    for setting in json.loads(advised.stdout)["sweep"]["settings"]:
        predicted, measured = setting["predicted_gain_ms"], setting["gain_ms"]
        if predicted:
            lines.append(f"| | {setting['label']} | {ci(predicted)} | {ci(measured)} | "
                         f"{measured['value'] - predicted['value']:+.1f} | {advice_verdict(Estimate(**measured))} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--models", default=",".join(MODELS))
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    print("| workload | finding / setting | predicted gain ms (95% CI) | measured gain ms (95% CI) | error ms | verdict |")
    print("|---|---|---|---|---|---|")
    for model in filter(None, args.models.split(",")):
        print("\n".join(rows(args.workdir, model, ["--model", model])), flush=True)
    print("\n".join(rows(args.workdir, "script", ["--max-steps", "30", "--", str(SCRIPT), "--epochs", "5",
                                                    "--width", "2048"])))


if __name__ == "__main__":
    main()
