"""Claims survive a rerun (issue 27; moved out of the suite by issue 71): each control launched REPEATS times as a
user would, `commprof run` on 2 CPU ranks; two launches never contradict each other, and the positive controls are
found every time:
- the default run (mlp-small): no bucket cap and no straggler claimed, the link probe complete;
- a rank that sleeps 40 ms before each batch (tests/data/scripts/slow_input_on_rank1.py): rank 1 the straggler,
  about the 40 ms, its idle start what grew;
- a rank that stalls 200 ms every 10th step (slow_every_10th_step_on_rank1.py): the six stalls found, rank 1's;
- a bucket cap so small that per-call latency dominates (deep_mlp.py at 0.001 MB): DDP's default advised every
  time, and `commprof advise` measures it faster in interleaved repeats.

    python benchmarks/check/reproducible.py [--workdir DIR] [--repeats 2]

Prints a Markdown table and exits 1 when a control misses or two launches contradict each other. What one recorded
launch of each finds is in the fast tier (tests/test_recorded_runs.py)."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, when run as a file
from benchmarks.common import TESTS_DATA, commprof, table_header, table_row  # noqa: E402
from commprof.instrument.link_probe import REPEATS as PROBE_REPEATS  # noqa: E402

SCRIPTS = TESTS_DATA / "scripts"
CONTROLS: dict[str, tuple[str, ...]] = {
    "default": (),
    "sleeper": ("--max-steps", "12", "--schedule", "3,1,6", "--", str(SCRIPTS / "slow_input_on_rank1.py")),
    "now-and-then": ("--schedule", "10,1,7", "--", str(SCRIPTS / "slow_every_10th_step_on_rank1.py")),
    "tiny": ("--model", f"{TESTS_DATA / 'deep_mlp.py'}:build", "--bucket-cap-mb", "0.001"),
}


def claims(report: dict[str, Any]) -> dict[str, str]:
    """What a report tells the user to do, by kind: the setting advised, the rank named, the ranks stalled."""
    found = {}
    for f in report["findings"]:
        if f["setting"]:
            found[f["kind"]] = json.dumps(f["setting"], sort_keys=True)
        elif f["kind"] == "straggler":
            found[f["kind"]] = str(f["straggler"]["rank"])
        elif f["kind"] == "stalls_now_and_then":
            found[f["kind"]] = str(f["stalls"]["rank"])
        elif f["kind"] == "input_stall":
            found[f["kind"]] = str(f["input_stall"]["stalled"])
    return found


def contradictions(reports: list[dict[str, Any]]) -> list[str]:
    every = [claims(r) for r in reports]
    return [
        f"{kind}: {sorted(said)}"
        for kind in sorted(set().union(*every))
        if len(said := {c[kind] for c in every if kind in c}) > 1
    ]


def misses(name: str, report: dict[str, Any]) -> list[str]:
    """What the control's truth requires and this launch's report lacks."""
    kinds = {f["kind"]: f for f in report["findings"]}
    if name == "default":
        wrong = [k for k in ("bucket_cap", "straggler") if k in kinds]
        probe = report["run"]["link_probe"]
        complete = bool(probe) and all(len(row["us"]) == PROBE_REPEATS for row in probe)
        return [f"claimed {k}" for k in wrong] + ([] if complete else ["link probe incomplete"])
    if name == "sleeper":
        s = kinds.get("straggler")
        right = s and s["straggler"]["rank"] == 1 and 30 <= s["gain_ms"]["value"] <= 50 and s["gain_ms"]["low"] > 0
        return [] if right and s["straggler"]["look_at"] == "start_idle_ms" else [f"straggler: {s and s['gain_ms']}"]
    if name == "now-and-then":
        stalls = [(s["step"], s["rank"]) for s in report["whole_run"]["standouts"] if s["lost_ms"] >= 150]
        found = kinds.get("stalls_now_and_then")
        right = found and found["stalls"]["rank"] == 1 and found["gain_ms"]["low"] > 0
        return [] if right and stalls == [(s, 1) for s in range(10, 61, 10)] else [f"stalls: {stalls}"]
    bucket = kinds.get("bucket_cap")
    right = bucket and bucket["setting"] == {"bucket_cap_mb": 25} and bucket["gain_ms"]["low"] > 0
    return [] if right else ["no bucket_cap_mb=25"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="commprof-reproducible-"))
    workdir.mkdir(parents=True, exist_ok=True)
    table_header("control", "launches", "claims (each launch)", "misses", "contradictions")
    failed = False
    for name, extra in CONTROLS.items():
        reports = []
        for i in range(args.repeats):
            commprof("run", "--run-id", f"{name}{i}", "--quiet", *extra, cwd=workdir)
            reports.append(json.loads((workdir / "reports" / f"{name}{i}" / "report.json").read_text()))
        missed = [f"launch {i}: {m}" for i, r in enumerate(reports) for m in misses(name, r)]
        if name == "tiny":
            advised = commprof("advise", "tiny0", "--json", "--quiet", cwd=workdir)
            checked = {s["label"]: s for s in json.loads(advised.stdout)["sweep"]["settings"]}
            best = checked.get("bucket-25mb")
            if not (best and best["significant"] and best["gain_ms"]["low"] > 0 and best["speedup"]["low"] > 1):
                missed.append("advise did not measure bucket-25mb faster")
        said = "; ".join(json.dumps(claims(r), sort_keys=True) for r in reports)
        contradicted = contradictions(reports)
        failed = failed or bool(missed or contradicted)
        table_row(name, args.repeats, said, "; ".join(missed) or "-", "; ".join(contradicted) or "-")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
